package grpcfront

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// capListener caps the gRPC listener's open connections as the public
// listener caps its own (supervisor's capListener): a connection over the
// cap is answered at once and closed, not left in the listen backlog
// (netutil.LimitListener's way), where a new well-behaved client would
// wait unanswered behind an attacker's idle connections. The answer is
// HTTP/2's: the server preface (an empty SETTINGS frame) and GOAWAY
// REFUSED_STREAM whose debug data says why, which gRPC clients report as
// UNAVAILABLE and retry with backoff.
//
// A refused connection costs one accept, one small write into an empty
// socket buffer and a close: nothing is read and no goroutine started.
type capListener struct {
	net.Listener
	max    int64
	open   atomic.Int64
	answer []byte
}

// refusalWriteTimeout bounds the write of the answer to a refused
// connection (it fits an empty socket buffer).
const refusalWriteTimeout = 100 * time.Millisecond

func newCapListener(ln net.Listener, maxConns int) *capListener {
	return &capListener{Listener: ln, max: int64(maxConns), answer: overCapAnswer(maxConns)}
}

// overCapAnswer is the server preface and GOAWAY a connection over the
// cap gets.
func overCapAnswer(maxConns int) []byte {
	var b bytes.Buffer
	f := http2.NewFramer(&b, nil)
	_ = f.WriteSettings()
	_ = f.WriteGoAway(0, http2.ErrCodeRefusedStream, []byte("server busy: "+strconv.Itoa(maxConns)+
		" gRPC connections are open (grpc.max_connections); retry later"))
	return b.Bytes()
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
		l.open.Add(-1)
		_ = c.SetWriteDeadline(time.Now().Add(refusalWriteTimeout))
		_, _ = c.Write(l.answer)
		_ = c.Close()
	}
}

// cappedConn gives its place back once, at its first Close.
type cappedConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
