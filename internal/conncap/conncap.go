package conncap

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Listener is a listener whose open connections are capped.
type Listener struct {
	net.Listener
	max     int64 // 0: no cap
	open    atomic.Int64
	refused atomic.Uint64
	answer  []byte
	// OnRefuse, when set, is told of each connection refused over the
	// cap, with the number open; it must not block.
	OnRefuse func(open int64)
	// OnAcceptError, when set, is told of each accept that failed for
	// want of resources (acceptBusy) before it is retried; it must not
	// block.
	OnAcceptError func(err error)
	// Admit, when set, is asked of each connection under the cap: a
	// non-nil answer refuses it (written, then the connection closed, as
	// over the cap). It must not block.
	Admit func(c net.Conn) (refusal []byte)
	// Wrap, when set, is what Accept returns for an admitted connection
	// (its own connection type over *Conn); it must give the place back
	// by closing the *Conn.
	Wrap func(c *Conn) net.Conn
}

// RefusalWriteTimeout bounds the write of the answer to a refused
// connection; the write fits an empty socket buffer, so this only
// matters for a socket the kernel already gave up on.
const RefusalWriteTimeout = 100 * time.Millisecond

// New caps ln at maxConns open connections (0: no cap); answer is
// written to each connection over it before it is closed.
func New(ln net.Listener, maxConns int, answer []byte) *Listener {
	return &Listener{Listener: ln, max: int64(maxConns), answer: answer}
}

// Accept returns the next connection under the cap and admitted (a
// *Conn, or what Wrap makes of it), answering and closing every other.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptCapped()
		if err != nil {
			return nil, err
		}
		if l.Admit != nil {
			if answer := l.Admit(c); answer != nil {
				Refuse(c, answer)
				continue
			}
		}
		if l.Wrap != nil {
			return l.Wrap(c), nil
		}
		return c, nil
	}
}

// StopListening makes the kernel refuse new connections at once, when
// the listener under the cap can (internal/listenstop's); an error
// otherwise.
func (l *Listener) StopListening() error {
	s, ok := l.Listener.(interface{ StopListening() error })
	if !ok {
		return errors.New("this listener cannot stop listening")
	}
	return s.StopListening()
}

// AcceptCapped is Accept with the connection's own type, for users that
// wrap it.
func (l *Listener) AcceptCapped() (*Conn, error) {
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if acceptBusy(err) {
			backoff = l.pause(err, backoff)
			continue
		}
		if err != nil {
			return nil, err
		}
		backoff = 0
		if n := l.open.Add(1); n <= l.max || l.max == 0 {
			return &Conn{Conn: c, l: l}, nil
		}
		open := l.open.Add(-1)
		l.refused.Add(1)
		if l.OnRefuse != nil {
			l.OnRefuse(open)
		}
		Refuse(c, l.answer)
	}
}

// acceptBusy reports an accept that failed for want of resources: the
// process's or the system's descriptors (a flood of connections on any of
// the master's listeners, or a cap above RLIMIT_NOFILE), or kernel
// memory. It passes once connections close, so the accept is retried, as
// net/http's Server does; returned, it ends the server's Serve, and the
// public listener's ends the master.
func acceptBusy(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// maxAcceptBackoff bounds the wait between retried accepts.
const maxAcceptBackoff = time.Second

// pause waits before an accept that failed with err is retried: 5ms,
// doubling up to maxAcceptBackoff while it keeps failing (net/http's
// schedule). It returns the wait it took.
func (l *Listener) pause(err error, last time.Duration) time.Duration {
	d := min(max(2*last, 5*time.Millisecond), maxAcceptBackoff)
	if l.OnAcceptError != nil {
		l.OnAcceptError(err)
	}
	time.Sleep(d)
	return d
}

// Open is the number of connections holding a place.
func (l *Listener) Open() int64 { return l.open.Load() }

// Refused is the number of connections refused over the cap so far.
func (l *Listener) Refused() uint64 { return l.refused.Load() }

// Refuse writes answer to c, bounded by RefusalWriteTimeout, and closes
// it (a *Conn gives its place back).
func Refuse(c net.Conn, answer []byte) {
	_ = c.SetWriteDeadline(time.Now().Add(RefusalWriteTimeout))
	_, _ = c.Write(answer)
	_ = c.Close()
}

// Conn is a connection under the cap; it gives its place back once, at
// its first Close.
type Conn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

// Close gives the connection's place back (once) and closes it: in that
// order, so that a client that sees the close and redials at once finds
// the place free.
func (c *Conn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// HTTPBusy is a whole HTTP/1.1 503 answer, with Retry-After: 1 and
// Connection: close, from server, carrying body of contentType: the
// refusal of a listener serving HTTP.
func HTTPBusy(server, contentType string, body []byte) []byte {
	b := []byte("HTTP/1.1 503 Service Unavailable\r\nServer: " + server + "\r\nConnection: close\r\n" +
		"Retry-After: 1\r\nContent-Type: " + contentType + "\r\nContent-Length: ")
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}
