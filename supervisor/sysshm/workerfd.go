package sysshm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Descriptors for the workers. A prep worker reads a request's inputs
// from their regions itself (Reader), with the descriptor the master
// opened at registration: the worker may run as another user
// (workers.user), who could not open the client's object, and opening
// it again by its name could find another object put there since. So
// the master passes its own descriptor (SCM_RIGHTS) over a socket pair
// made for each prep worker at spawn (WorkerSocket), on the worker's
// demand: the worker asks for a region by id the first time a request
// names it, and keeps the descriptor. Pulled, not pushed: a request
// never reaches a worker before its region's descriptor (the worker asks
// while it holds the request, and the master answers while the region
// is registered), a worker spawned later needs no replay, and the
// master keeps no state per worker. The region's object is what the
// descriptor opens whatever its name now holds; the worker checks its
// device and inode against the Ref's all the same.

// WorkerSocket is a socket pair for one prep worker: the master serves
// its end (ServeWorker), the worker inherits the other (NewReader).
func WorkerSocket() (master, worker *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("shared memory descriptor socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "sysshm-master"), os.NewFile(uintptr(fds[1]), "sysshm-worker"), nil
}

// Answers of ServeWorker: the descriptor follows refHeld.
const (
	refHeld byte = iota
	refGone
)

// ServeWorker answers one prep worker's asks for regions' descriptors on
// its end of WorkerSocket until the worker's end closes (it exited); it
// closes f. An id no longer registered (the region unregistered since
// the request was checked) is answered refGone, which the worker
// answers 400.
func (r *Registry) ServeWorker(f *os.File) {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return
	}
	defer c.Close()
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return
	}
	var ask [8]byte
	for {
		n, _, _, _, err := uc.ReadMsgUnix(ask[:], nil)
		if err != nil || n == 0 {
			return
		}
		if n != len(ask) {
			continue
		}
		if err := r.answer(uc, binary.LittleEndian.Uint64(ask[:])); err != nil {
			return
		}
	}
}

// answer sends region id's descriptor, or refGone.
func (r *Registry) answer(c *net.UnixConn, id uint64) error {
	r.mu.Lock()
	g := r.byID[id]
	r.mu.Unlock()
	if g != nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.closed {
			_, _, err := c.WriteMsgUnix([]byte{refHeld}, unix.UnixRights(int(g.f.Fd())), nil)
			return err
		}
	}
	_, _, err := c.WriteMsgUnix([]byte{refGone}, nil, nil)
	return err
}

// maxHeld bounds the descriptors a Reader keeps. Holding one costs the
// server nothing while its object is linked (the client's /dev/shm holds
// it anyway); one unlinked is dropped when next used or swept (sweep).
const maxHeld = 64

// Reader is the prep worker's side: it reads a request's inputs from
// their regions (Read) and writes its outputs into theirs (Write), with
// the master's descriptors.
type Reader struct {
	mu   sync.Mutex // one ask at a time on c; held
	c    *net.UnixConn
	held map[uint64]*os.File
}

// NewReader is the Reader on the worker's end of WorkerSocket, inherited
// as descriptor fd.
func NewReader(fd int) (*Reader, error) {
	f := os.NewFile(uintptr(fd), "sysshm-worker")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("shared memory descriptor socket (fd %d): %w", fd, err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("shared memory descriptor socket (fd %d) is not a Unix socket", fd)
	}
	rd := &Reader{c: uc, held: map[uint64]*os.File{}}
	go rd.sweepEvery(10 * time.Second)
	return rd, nil
}

// Read reads ref's bytes into dst (len(dst) == ref.Size) from the region,
// checked first (check); 400 when it is not, or when it shrank before
// the read ended. pread, not a mapping: the copy goes from the object's
// pages straight into dst, and a truncation under it is a short read,
// not a fault, so nothing can kill the worker.
func (rd *Reader) Read(ref Ref, dst []byte) error {
	f, err := rd.check(ref, uint64(len(dst)))
	if err != nil {
		return err
	}
	n, err := f.ReadAt(dst, int64(ref.Off))
	if n < len(dst) {
		if err == nil || errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: %w", ErrGone, &Error{Status: 400, Msg: fmt.Sprintf("shared memory region %q: its object %q was truncated while the server read it (%d of %d bytes); create it again and register it again", ref.Name, ref.Key, n, len(dst))})
		}
		return fmt.Errorf("shared memory region %q: read: %w", ref.Name, err)
	}
	return nil
}

// Write writes src into the region at ref.Off, checked first (check).
// pwrite, not a mapping, for the same reason as Read: an object
// truncated between the check and the write cannot fault the worker;
// the write then gives it back the bytes of the region it writes (the
// client's object, within what it registered), and the client reads
// what it asked for.
func (rd *Reader) Write(ref Ref, src []byte) error {
	f, err := rd.check(ref, uint64(len(src)))
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(src, int64(ref.Off)); err != nil {
		return fmt.Errorf("%w: %w", ErrGone, &Error{Status: 400, Msg: fmt.Sprintf("shared memory region %q: write to its object %q: %v", ref.Name, ref.Key, err)})
	}
	return nil
}

// check is ref's descriptor once fstat says it is the object the master
// registered (device, inode), still linked, and holds n bytes from
// ref.Off; 400 (ErrGone) when it is not.
func (rd *Reader) check(ref Ref, n uint64) (*os.File, error) {
	f, err := rd.file(ref.ID)
	if err != nil {
		return nil, err
	}
	// os.File's own Stat and ReadAt, not its Fd: a sweep may close f
	// meanwhile, and os.File holds the descriptor until they return.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shared memory region %q: fstat: %w", ref.Name, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("shared memory region %q: fstat gave no stat", ref.Name)
	}
	switch {
	case st.Dev != ref.Dev || st.Ino != ref.Ino:
		rd.drop(ref.ID, f)
		return nil, fmt.Errorf("shared memory region %q: the descriptor held is not its object's (device %d inode %d, want %d %d)", ref.Name, st.Dev, st.Ino, ref.Dev, ref.Ino)
	case st.Nlink == 0:
		rd.drop(ref.ID, f)
		return nil, fmt.Errorf("%w: %w", ErrGone, &Error{Status: 400, Msg: fmt.Sprintf("shared memory region %q: its object %q was unlinked; create it again and register it again", ref.Name, ref.Key)})
	case uint64(st.Size) < ref.Off+n:
		return nil, fmt.Errorf("%w: %w", ErrGone, &Error{Status: 400, Msg: fmt.Sprintf("shared memory region %q: its object %q holds %d bytes, fewer than offset %d + byte_size %d", ref.Name, ref.Key, st.Size, ref.Off, n)})
	}
	return f, nil
}

// file is region id's descriptor, asked of the master the first time.
func (rd *Reader) file(id uint64) (*os.File, error) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if f := rd.held[id]; f != nil {
		return f, nil
	}
	var ask [8]byte
	binary.LittleEndian.PutUint64(ask[:], id)
	if _, _, err := rd.c.WriteMsgUnix(ask[:], nil, nil); err != nil {
		return nil, fmt.Errorf("ask the master for shared memory region %d: %w", id, err)
	}
	var ans [1]byte
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := rd.c.ReadMsgUnix(ans[:], oob)
	if err != nil || n != 1 {
		return nil, fmt.Errorf("the master's answer for shared memory region %d: %v", id, err)
	}
	if ans[0] != refHeld {
		return nil, &Error{Status: 400, Msg: "a shared memory region this request names was unregistered while it was sent"}
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("the master's answer for shared memory region %d carries no descriptor", id)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("the master's answer for shared memory region %d carries no descriptor", id)
	}
	unix.CloseOnExec(fds[0])
	rd.sweepLocked()
	f := os.NewFile(uintptr(fds[0]), fmt.Sprintf("sysshm-region-%d", id))
	rd.held[id] = f
	return f, nil
}

// drop lets region id's descriptor go, if it is still f.
func (rd *Reader) drop(id uint64, f *os.File) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.held[id] == f {
		delete(rd.held, id)
		f.Close()
	}
}

// sweepLocked lets go the descriptors of unlinked objects (holding one
// would keep its memory), and any one past maxHeld.
func (rd *Reader) sweepLocked() {
	for id, f := range rd.held {
		var st *syscall.Stat_t
		if fi, err := f.Stat(); err == nil {
			st, _ = fi.Sys().(*syscall.Stat_t)
		}
		if st == nil || st.Nlink == 0 || len(rd.held) >= maxHeld {
			delete(rd.held, id)
			f.Close()
		}
	}
}

// sweepEvery sweeps now and then: an object unlinked after its last
// request is let go without waiting for another.
func (rd *Reader) sweepEvery(d time.Duration) {
	for range time.Tick(d) {
		rd.mu.Lock()
		rd.sweepLocked()
		rd.mu.Unlock()
	}
}
