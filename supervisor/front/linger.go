package front

import (
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/supervisor-dev/supervisor/internal/coarsedeadline"
	"github.com/supervisor-dev/supervisor/internal/conncap"
)

// Lingering close, as nginx's lingering_close and Go's net/http do. A
// request refused with its body unread (from its header, or from the
// prefix of its body) is answered and its connection closed; but closing
// a socket with unread bytes in it sends a reset, and a client that was
// still sending its body gets ECONNRESET, often before it has read the
// answer that explains why. So such a connection is closed in two steps:
// the write side first (the client reads the whole answer, then end of
// stream), then, while the rest of the body is read and thrown away, the
// whole socket once the client has closed its side, lingerTime has passed
// or lingerMaxBytes were discarded (then the connection is left unread
// until lingerTime, and reset). A client that sends its whole body before
// it reads (most blocking HTTP clients) gets its answer for bodies up to
// lingerMaxBytes; one that reads while it sends gets it for any body.
//
// What a lingering connection costs is bounded: it keeps its place under
// max_connections until it is really closed, a goroutine, one pooled
// buffer while it reads, at most lingerMaxBytes of reading and lingerTime.

const (
	lingerTime     = time.Second
	lingerMaxBytes = 4 << 20
)

var lingerBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// lingerConn is a public connection: it gives its place under the cap
// back exactly once, when it is really closed: at its first Close, or
// after a lingering close when one was asked for. Its deadlines are
// coarse (publicDeadlines): fasthttp moves them three times a request.
type lingerConn struct {
	*conncap.Conn
	linger    atomic.Bool // close by lingering (lingerOnClose)
	deadlines *coarsedeadline.Deadlines
}

// publicDeadlines keeps the public connections' deadlines: fasthttp's
// server re-arms a read deadline twice a request (the idle wait, then
// the header) and a write deadline once, each a runtime timer moved in
// the poller; kept here they cost a store, and the ones that pass are
// expired on a tick (internal/coarsedeadline: never early, at most
// 62.5 ms late; those under a second away are armed as before).
var publicDeadlines = coarsedeadline.New(0)

func newLingerConn(c *conncap.Conn) *lingerConn {
	return &lingerConn{Conn: c, deadlines: publicDeadlines.Track(c.Conn)}
}

func (c *lingerConn) SetDeadline(t time.Time) error      { return c.deadlines.SetDeadline(t) }
func (c *lingerConn) SetReadDeadline(t time.Time) error  { return c.deadlines.SetReadDeadline(t) }
func (c *lingerConn) SetWriteDeadline(t time.Time) error { return c.deadlines.SetWriteDeadline(t) }

func (c *lingerConn) Close() error {
	c.deadlines.Stop() // idempotent; the lingering close sets its own
	if c.linger.Swap(false) {
		go c.lingerThenClose()
		return nil
	}
	return c.closeNow()
}

func (c *lingerConn) closeNow() error { return c.Conn.Close() }

// lingerOnClose asks that conn, when fasthttp closes it, be closed by a
// lingering close; a connection that is not the front listener's (tests
// that call the handler directly) is closed as it would be.
func lingerOnClose(conn net.Conn) {
	if c, ok := underTLS(conn).(*lingerConn); ok {
		c.linger.Store(true)
	}
}

// underTLS is the connection under c's TLS (tls.NewListener's, when
// the tls section is on; a closed *tls.Conn closes it after its
// close_notify), or c.
func underTLS(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// lingerThenClose closes c's write side, discards what the client still
// sends within the bounds above, then closes c.
func (c *lingerConn) lingerThenClose() {
	defer c.closeNow()
	raw := c.Conn.Conn // the socket: CloseWrite is not net.Conn's
	cw, ok := raw.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	end := time.Now().Add(lingerTime)
	if raw.SetReadDeadline(end) != nil {
		return
	}
	bp := lingerBuffers.Get().(*[]byte)
	defer lingerBuffers.Put(bp)
	for read := 0; read < lingerMaxBytes; {
		n, err := raw.Read(*bp)
		read += n
		if err != nil {
			return // the client closed, the time is up, or the socket failed
		}
	}
	// Past lingerMaxBytes: the answer is in the socket; leave the rest
	// unread until lingerTime, then reset.
	time.Sleep(time.Until(end))
}
