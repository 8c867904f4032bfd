package arena

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Arena is a mapped arena: the owner's (Create) or a peer's (Open).
type Arena struct {
	ref       Ref
	mem       []byte
	slots     int
	slotBytes int

	owner *owner // nil on the peer side
	peer  peer   // the zero value on the owner side
}

// owner is the prep worker's side: the memfd and the free slots.
type owner struct {
	fd int
	// avail holds one token per free slot (a semaphore to wait on), stack
	// their numbers. Last freed, first reused: its pages are the
	// likeliest to be in cache and mapped.
	avail chan struct{}
	// mu guards stack and closed, and orders the changes of inUse and
	// fullSince (atomics for readers that take no lock).
	mu     sync.Mutex
	stack  []int
	closed bool

	inUse     atomic.Int64
	fullSince atomic.Int64 // Unix ns when the last free slot was taken; 0 while one is free
	reclaimed atomic.Uint64
	backstops atomic.Uint64

	stop     chan struct{} // closed by Close: watchers give up
	stopOnce sync.Once
	watchers sync.WaitGroup
}

// Ref names the arena for infer workers.
func (a *Arena) Ref() Ref { return a.ref }

// Slots is the number of slots.
func (a *Arena) Slots() int { return a.slots }

// Create makes an arena of slots slots of slotBytes bytes each (rounded up
// to a multiple of 8): a sealed memfd, mapped. Every slot is free. Pages
// are allocated only when written, so a large arena costs memory only for
// what requests use.
func Create(slots, slotBytes int) (*Arena, error) {
	slotBytes = (slotBytes + 7) &^ 7
	size, ok := arenaSize(uint64(max(slots, 0)), uint64(max(slotBytes, 0)))
	if !ok {
		return nil, fmt.Errorf("arena of %d slots of %d bytes: want 1 to %d slots of 8 bytes to 4GiB", slots, slotBytes, maxSlots)
	}
	fd, err := unix.MemfdCreate("supervisor-arena", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("create arena: memfd_create: %w", err)
	}
	mem, err := sealAndMap(fd, size)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	h := header{slots: slots, slotBytes: slotBytes, token: randomToken()}
	h.put(mem)
	a := &Arena{ref: Ref{PID: os.Getpid(), FD: fd, Token: h.token}, mem: mem, slots: slots, slotBytes: slotBytes,
		owner: &owner{fd: fd, avail: make(chan struct{}, slots), stop: make(chan struct{})}}
	for i := slots - 1; i >= 0; i-- {
		a.owner.stack = append(a.owner.stack, i)
		a.owner.avail <- struct{}{}
	}
	return a, nil
}

// sealedAgainst are the seals every arena carries: it can neither shrink
// (a mapping could fault) nor grow, and nobody can add a seal later (such
// as F_SEAL_FUTURE_WRITE, which would stop infer workers mapping it
// writable). This is why an arena is a sealed memfd, not a /dev/shm file:
// ONNX Runtime reads inputs in place from C, where a SIGBUS cannot be
// recovered, and O_EXCL|O_NOFOLLOW plus debug.SetPanicOnFault would
// protect only Go reads. A memfd also has no name anyone could pre-create,
// replace or truncate, and vanishes with the last process mapping it.
const sealedAgainst = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// sealAndMap sizes the memfd, seals it and maps it.
func sealAndMap(fd, size int) ([]byte, error) {
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return nil, fmt.Errorf("size arena to %d bytes: %w", size, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, sealedAgainst); err != nil {
		return nil, fmt.Errorf("seal arena: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map arena of %d bytes: %w", size, err)
	}
	return mem, nil
}

func randomToken() uint64 {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand panics on a broken source)
	return binary.LittleEndian.Uint64(b[:])
}

// Close unmaps the arena. On the owner side it first stops the watchers of
// unsettled slots and closes the memfd; the memory goes away with the last
// infer worker that still maps it.
func (a *Arena) Close() error {
	if o := a.owner; o != nil {
		o.mu.Lock()
		o.closed = true // no watcher starts after this
		o.mu.Unlock()
		o.stopOnce.Do(func() { close(o.stop) })
		o.watchers.Wait()
		defer unix.Close(o.fd)
	}
	return unix.Munmap(a.mem)
}

func (a *Arena) offset(i int) int { return headerSize + i*(slotHeader+a.slotBytes) }

// Check reports whether i names a slot.
func (a *Arena) Check(i int) error {
	if i < 0 || i >= a.slots {
		return fmt.Errorf("%w: arena %s has no slot %d", ErrBadRef, a.ref, i)
	}
	return nil
}

// Buf is slot i's data area: length 0, capacity the slot size. Append a
// frame to it; if the frame outgrows the slot, append moves it elsewhere,
// which Fits detects.
func (a *Arena) Buf(i int) []byte {
	off := a.offset(i) + slotHeader
	return a.mem[off : off : off+a.slotBytes]
}

// Frame is the first n bytes of slot i, or an error when n does not fit.
func (a *Arena) Frame(i, n int) ([]byte, error) {
	if err := a.Check(i); err != nil {
		return nil, err
	}
	if n < 0 || n > a.slotBytes {
		return nil, fmt.Errorf("%w: arena %s: frame of %d bytes in a %d-byte slot", ErrBadRef, a.ref, n, a.slotBytes)
	}
	return a.Buf(i)[:n], nil
}

// Fits reports whether frame was built in slot i's own memory.
func (a *Arena) Fits(i int, frame []byte) bool {
	buf := a.Buf(i)
	return len(frame) > 0 && len(frame) <= cap(buf) && unsafe.SliceData(frame) == unsafe.SliceData(buf[:1])
}
