package front

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/supervisor-dev/supervisor/internal/listenstop"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// capListener enforces limits.max_connections on the public listener
// itself, so that a connection over the cap gets the same answer as every
// other refusal: 503 with Retry-After and a V2 error JSON body. fasthttp's
// own cap (Server.Concurrency) answers text/plain and cannot be changed;
// the front server's Concurrency is set above this cap so that only this
// one ever refuses.
//
// A refused connection costs one accept, one small write into an empty
// socket buffer (which cannot block) and a close: nothing is read from
// it and no goroutine is started for it. An admitted connection holds
// its place until it is closed, by whichever side.
type capListener struct {
	// Listener gives StopListening (for a stop that hands over to no
	// one: tableflip's descriptor would keep the socket listening through
	// the drain); Accept then ends with net.ErrClosed. After an upgrade
	// the socket is the new master's: never call it then.
	*listenstop.Listener
	max      int64
	open     atomic.Int64
	refused  atomic.Uint64
	answer   []byte
	onRefuse func(open int64) // told of each refusal (logs at most once a minute)
}

// refusalWriteTimeout bounds the write of the 503 to a refused
// connection; the write fits an empty socket buffer, so this only
// matters for a socket the kernel already gave up on.
const refusalWriteTimeout = 100 * time.Millisecond

func newCapListener(ln net.Listener, maxConns int) *capListener {
	return &capListener{Listener: listenstop.Wrap(ln), max: int64(maxConns), answer: overCapAnswer(maxConns)}
}

// overCapAnswer is the whole HTTP response to a connection over the cap.
func overCapAnswer(maxConns int) []byte {
	body := v2.AppendError(nil, "server busy: "+strconv.Itoa(maxConns)+
		" client connections are open (limits.max_connections); retry later")
	b := []byte("HTTP/1.1 503 Service Unavailable\r\nServer: supervisor\r\nConnection: close\r\n" +
		"Retry-After: 1\r\nContent-Type: application/json\r\nContent-Length: ")
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}

// Accept returns the next connection under the cap, answering and
// closing every connection over it.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &cappedConn{Conn: c, l: l}, nil
		}
		open := l.open.Add(-1)
		l.refused.Add(1)
		if l.onRefuse != nil {
			l.onRefuse(open)
		}
		_ = c.SetWriteDeadline(time.Now().Add(refusalWriteTimeout))
		_, _ = c.Write(l.answer)
		_ = c.Close()
	}
}

// cappedConn gives its place back exactly once, when it is really
// closed: at its first Close, or after a lingering close (linger.go)
// when one was asked for.
type cappedConn struct {
	net.Conn
	l      *capListener
	once   sync.Once
	linger atomic.Bool // close by lingering (lingerOnClose)
}

func (c *cappedConn) Close() error {
	if c.linger.Swap(false) {
		go c.lingerThenClose()
		return nil
	}
	return c.closeNow()
}

func (c *cappedConn) closeNow() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// capConnections wraps the public listener in the max_connections cap;
// refusals are logged at most once a minute, as fasthttp did.
func (f *Front) capConnections(ln net.Listener, maxConns int) *capListener {
	cl := newCapListener(ln, maxConns)
	var last atomic.Int64
	cl.onRefuse = func(open int64) {
		now := time.Now().UnixNano()
		if prev := last.Load(); now-prev > int64(time.Minute) && last.CompareAndSwap(prev, now) {
			f.log.Warn().Int64("open", open).Uint64("refused", cl.refused.Load()).
				Msg("refusing connections over limits.max_connections (503); raise it if these are real clients")
		}
	}
	return cl
}
