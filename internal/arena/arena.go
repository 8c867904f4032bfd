// Package arena is the shared-memory tensor handoff between a prep worker
// and the infer workers: a file in /dev/shm holding a ring of fixed-size
// slots. The prep worker owns the arena; it writes a request's tensor frame
// into a free slot once and sends the infer worker only the slot's number.
// The infer worker reads the inputs in place and writes its reply frame
// into the same slot.
//
// Each slot starts with a state word that both processes change with
// atomics: Free (the prep worker's to hand out), Sent (an infer worker may
// be reading or writing it) and Done (the infer worker has finished with
// it). A slot whose request failed or timed out on the prep side is
// abandoned: it returns to the free list only once its infer worker says
// Done, or after a grace period longer than any infer worker can hold it,
// so a late infer worker never writes into a slot given to another
// request.
package arena

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Slot states.
const (
	Free uint32 = iota
	Sent
	Done
)

const (
	magic      = "SVARENA1"
	headerSize = 64
	// slotHeader holds the state word and the frame length; the data
	// after it stays 8-byte aligned, as tensor frames need.
	slotHeader = 16
)

// ErrFull means no slot became free within the wait allowed.
var ErrFull = errors.New("shared-memory arena full")

// Arena is a mapped arena file.
type Arena struct {
	path      string
	mem       []byte
	slots     int
	slotBytes int
	// The owner's free slots: avail holds one token per free slot (a
	// semaphore to wait on), stack their numbers. Last freed, first
	// reused: its pages are the likeliest to be in cache and mapped.
	avail chan struct{}
	mu    sync.Mutex
	stack []int
}

// Path returns the arena file's path.
func (a *Arena) Path() string { return a.path }

// Dir is where arenas live; names start with Prefix and end with Suffix,
// which Open insists on, so a descriptor cannot make an infer worker map an
// arbitrary file.
const (
	Dir    = "/dev/shm"
	Prefix = "supervisor-"
	Suffix = ".arena"
)

// PathFor names the arena of the worker listening on socket: unique per
// worker process, like its socket.
func PathFor(socket string) string {
	return filepath.Join(Dir, Prefix+strings.TrimSuffix(filepath.Base(socket), ".sock")+Suffix)
}

// Create makes the arena file (0600) with slots slots of slotBytes bytes
// each and maps it; every slot is free. Pages are allocated only when
// written, so a large arena costs memory only for what requests use.
func Create(path string, slots, slotBytes int) (*Arena, error) {
	if slots < 1 || slotBytes < 1 {
		return nil, fmt.Errorf("arena %s: want at least one slot of at least one byte", path)
	}
	slotBytes = (slotBytes + 7) &^ 7
	size := headerSize + slots*(slotHeader+slotBytes)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create arena: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("size arena %s: %w", path, err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("map arena %s: %w", path, err)
	}
	copy(mem, magic)
	binary.LittleEndian.PutUint64(mem[8:], uint64(slots))
	binary.LittleEndian.PutUint64(mem[16:], uint64(slotBytes))
	a := &Arena{path: path, mem: mem, slots: slots, slotBytes: slotBytes, avail: make(chan struct{}, slots)}
	for i := slots - 1; i >= 0; i-- {
		a.stack = append(a.stack, i)
		a.avail <- struct{}{}
	}
	return a, nil
}

// Open maps an existing arena (the infer side). path must name an arena
// file in Dir.
func Open(path string) (*Arena, error) {
	if filepath.Dir(path) != Dir || !strings.HasPrefix(filepath.Base(path), Prefix) || !strings.HasSuffix(path, Suffix) {
		return nil, fmt.Errorf("%q is not an arena path (%s/%s*%s)", path, Dir, Prefix, Suffix)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open arena: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < headerSize {
		return nil, fmt.Errorf("arena %s is too small", path)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map arena %s: %w", path, err)
	}
	slots, slotBytes := binary.LittleEndian.Uint64(mem[8:]), binary.LittleEndian.Uint64(mem[16:])
	if string(mem[:8]) != magic || slots == 0 || slotBytes == 0 ||
		uint64(len(mem)) != headerSize+slots*(slotHeader+slotBytes) {
		unix.Munmap(mem)
		return nil, fmt.Errorf("arena %s: bad header", path)
	}
	return &Arena{path: path, mem: mem, slots: int(slots), slotBytes: int(slotBytes)}, nil
}

// Close unmaps the arena; the owner also removes the file.
func (a *Arena) Close() error {
	if a.avail != nil {
		os.Remove(a.path)
	}
	return unix.Munmap(a.mem)
}

func (a *Arena) offset(i int) int { return headerSize + i*(slotHeader+a.slotBytes) }

func (a *Arena) state(i int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&a.mem[a.offset(i)]))
}

// Check reports whether i names a slot.
func (a *Arena) Check(i int) error {
	if i < 0 || i >= a.slots {
		return fmt.Errorf("arena %s has no slot %d", a.path, i)
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
		return nil, fmt.Errorf("arena %s: frame of %d bytes in a %d-byte slot", a.path, n, a.slotBytes)
	}
	return a.Buf(i)[:n], nil
}

// Fits reports whether frame was built in slot i's own memory.
func (a *Arena) Fits(i int, frame []byte) bool {
	buf := a.Buf(i)
	return len(frame) > 0 && len(frame) <= cap(buf) && unsafe.SliceData(frame) == unsafe.SliceData(buf[:1])
}

// Acquire takes a free slot and marks it Sent, waiting at most wait for
// one (backpressure): ErrFull after that.
func (a *Arena) Acquire(wait time.Duration) (int, error) {
	select {
	case <-a.avail:
	default:
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-a.avail:
		case <-t.C:
			return 0, ErrFull
		}
	}
	a.mu.Lock()
	i := a.stack[len(a.stack)-1]
	a.stack = a.stack[:len(a.stack)-1]
	a.mu.Unlock()
	a.state(i).Store(Sent)
	return i, nil
}

// Release returns slot i to the free list once its exchange completed.
func (a *Arena) Release(i int) {
	a.state(i).Store(Free)
	a.mu.Lock()
	a.stack = append(a.stack, i)
	a.mu.Unlock()
	a.avail <- struct{}{}
}

// Abandon returns slot i to the free list only once the infer worker that
// may still hold it marks it Done, or after grace: the longest an infer
// worker can keep a request (its upstream timeout plus the hang
// detection that would kill it).
func (a *Arena) Abandon(i int, grace time.Duration) {
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(grace)
		for a.state(i).Load() != Done {
			select {
			case <-tick.C:
			case <-deadline:
				a.Release(i)
				return
			}
		}
		a.Release(i)
	}()
}

// Finish marks slot i Done: the infer worker will not touch it again.
func (a *Arena) Finish(i int) { a.state(i).Store(Done) }
