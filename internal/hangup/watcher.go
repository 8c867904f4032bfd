package hangup

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
)

// ErrUnwatchable is returned (wrapped) by Watch for a connection it
// cannot register: no socket under it (syscall.Conn), one already closed,
// or a system without epoll. The caller polls PeerClosed instead.
var ErrUnwatchable = errors.New("the connection cannot be watched for its peer's hang-up")

// A Watcher calls a function when the peer of a watched connection hangs
// up. Its methods are safe for concurrent use. It lives as long as the
// process: its goroutine never ends.
type Watcher struct {
	ep epoll // the kernel side: one instance, one waiting goroutine

	mu sync.Mutex
	// next is the token of the next registration, never reused: an event
	// carries a token, not a descriptor or a pointer, so one that races
	// with a cancel finds its token gone and is dropped.
	next    uint64
	watches map[uint64]*entry // registered and not yet fired nor cancelled
}

// entry is one registration.
type entry struct {
	w      *Watcher
	raw    syscall.RawConn // the watched socket
	token  uint64
	onGone func()
	fired  chan struct{} // closed once onGone has returned
	once   sync.Once     // cancel's
}

// Default is the process's Watcher, started on first use; its error
// (epoll unavailable) is returned by every call, and callers then poll.
var Default = sync.OnceValues(New)

// New starts a Watcher: an epoll instance and the goroutine that waits on
// it. Processes use Default; tests may want their own.
func New() (*Watcher, error) {
	w := &Watcher{watches: make(map[uint64]*entry)}
	if err := w.ep.open(); err != nil {
		return nil, err
	}
	go w.ep.wait(w.fire)
	return w, nil
}

// Watch calls onGone once, on the Watcher's goroutine, when conn's peer
// hangs up (or already has), until the returned cancel is called. cancel
// deregisters conn and returns once onGone will not be called or has
// returned: after it, onGone does not run. cancel may be called more than
// once, and after conn is closed. It fails with ErrUnwatchable when conn
// cannot be registered. See the package doc for who may call it when.
func (w *Watcher) Watch(conn net.Conn, onGone func()) (cancel func(), err error) {
	raw, err := rawConn(conn)
	if err != nil {
		return nil, err
	}
	e := &entry{w: w, raw: raw, onGone: onGone, fired: make(chan struct{})}
	w.mu.Lock()
	w.next++
	e.token = w.next
	w.watches[e.token] = e
	w.mu.Unlock()
	if err := w.ep.add(raw, e.token); err != nil {
		w.forget(e.token)
		return nil, err
	}
	return e.cancel, nil
}

// cancel deregisters e's socket and, if its event is being delivered,
// waits for onGone to return.
func (e *entry) cancel() {
	e.once.Do(func() {
		e.w.ep.del(e.raw)
		if !e.w.forget(e.token) {
			<-e.fired
		}
	})
}

// forget drops token and reports whether it was still registered (no
// event has taken it).
func (w *Watcher) forget(token uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.watches[token]
	delete(w.watches, token)
	return ok
}

// fire delivers token's event: its onGone runs unless a cancel took it
// first.
func (w *Watcher) fire(token uint64) {
	w.mu.Lock()
	e := w.watches[token]
	delete(w.watches, token)
	w.mu.Unlock()
	if e == nil {
		return
	}
	defer close(e.fired)
	e.onGone()
}

// Watching is how many registrations wait for an event.
func (w *Watcher) Watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}

// rawConn is conn's syscall.RawConn, or ErrUnwatchable.
func rawConn(conn net.Conn) (syscall.RawConn, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%w: %T has no socket under it", ErrUnwatchable, conn)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnwatchable, err)
	}
	return raw, nil
}
