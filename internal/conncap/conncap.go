package conncap

import (
	"net"
	"sync"
	"sync/atomic"
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

// Accept returns the next connection under the cap, a *Conn, answering
// and closing every connection over it.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.AcceptCapped()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AcceptCapped is Accept with the connection's own type, for users that
// wrap it.
func (l *Listener) AcceptCapped() (*Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
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
