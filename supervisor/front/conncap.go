package front

import (
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/supervisor-dev/supervisor/internal/conncap"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// capListener enforces limits.max_connections on the public listener
// itself (conncap), so that a connection over the cap gets the same
// answer as every other refusal: 503 with Retry-After and a V2 error JSON
// body. fasthttp's own cap (Server.Concurrency) answers text/plain and
// cannot be changed; the front server's Concurrency is set above this cap
// so that only this one ever refuses. Its connections can close by
// lingering (linger.go), and it can stop listening (listenstop.go).
type capListener struct {
	*conncap.Listener
	stopped atomic.Bool // stopListening ran: Accept's error is net.ErrClosed
}

func newCapListener(ln net.Listener, maxConns int) *capListener {
	return &capListener{Listener: conncap.New(ln, maxConns, overCapAnswer(maxConns))}
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
	c, err := l.AcceptCapped()
	if err != nil && l.stopped.Load() {
		return nil, net.ErrClosed // the server's usual end, not a failure to log
	}
	if err != nil {
		return nil, err
	}
	return &cappedConn{Conn: c}, nil
}

// cappedConn gives its place back exactly once, when it is really
// closed: at its first Close, or after a lingering close (linger.go)
// when one was asked for.
type cappedConn struct {
	*conncap.Conn
	linger atomic.Bool // close by lingering (lingerOnClose)
}

func (c *cappedConn) Close() error {
	if c.linger.Swap(false) {
		go c.lingerThenClose()
		return nil
	}
	return c.closeNow()
}

func (c *cappedConn) closeNow() error { return c.Conn.Close() }

// capConnections wraps the public listener in the max_connections cap;
// refusals are logged at most once a minute, as fasthttp did.
func (f *Front) capConnections(ln net.Listener, maxConns int) *capListener {
	cl := newCapListener(ln, maxConns)
	var last atomic.Int64
	cl.OnRefuse = func(open int64) {
		now := time.Now().UnixNano()
		if prev := last.Load(); now-prev > int64(time.Minute) && last.CompareAndSwap(prev, now) {
			f.log.Warn().Int64("open", open).Uint64("refused", cl.Refused()).
				Msg("refusing connections over limits.max_connections (503); raise it if these are real clients")
		}
	}
	return cl
}
