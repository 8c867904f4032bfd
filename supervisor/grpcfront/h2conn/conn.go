package h2conn

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/peer"

	"github.com/supervisor-dev/supervisor/internal/conncap"
)

// The gRPC listener is capped as the public listener is (conncap): a
// connection over the cap is answered at once and closed. The answer is
// HTTP/2's: the server preface (an empty SETTINGS frame) and GOAWAY
// REFUSED_STREAM whose debug data says why, which gRPC clients report as
// UNAVAILABLE and retry with backoff. A new connection of an address
// under penalty (penaltyBox) is answered the same way, with
// ENHANCE_YOUR_CALM.
//
// The open connections are also kept by remote address (Set), so
// that a stream's watchdog can close the connection of a client that
// does not read its answers (gRPC gives a handler no way to).

// Set is the open connections by remote address, each with its
// budget of streams ended before their first message.
type Set struct {
	mu        sync.Mutex
	m         map[string]*Entry
	penalties *penaltyBox // strikes the address of a connection closed for misbehaviour
}

// Entry is one open connection of a Set, as its streams' handlers see
// it: its budget of early ends, whether it was cut, its answers held.
type Entry struct {
	c     net.Conn
	early *rate.Limiter
	box   *penaltyBox
	cut   atomic.Bool // closed for its client's misbehaviour: refuse its next streams at once
	// answers are its answers charged and not yet written, given back
	// when it closes (see Answer).
	answers answerSet
}

// The budget of streams a connection may end (RST_STREAM, mostly)
// before their first message is in, beyond which the connection is
// closed: HTTP/2 rapid reset (CVE-2023-44487) opens streams and resets
// them at once, each costing the master a stream, a header decode, the
// admission check and a handler goroutine but never a request. grpc-go
// bounds the handlers running at once per connection (to
// MaxConcurrentStreams) but not the rate; a well-behaved client cancels
// an RPC after sending its message, which does not count.
const (
	EarlyEndsPerSecond = 100
	EarlyEndsBurst     = 200
)

// NewSet is an empty set whose connections closed for misbehaviour
// cost their address abusePenalty (0: nothing; see penaltyBox).
func NewSet(abusePenalty time.Duration) *Set {
	return &Set{penalties: newPenaltyBox(abusePenalty, penaltyEntries)}
}

// Add tracks c, a connection of the listener, until it is removed.
func (s *Set) Add(c net.Conn) *Entry {
	e := &Entry{c: c, early: rate.NewLimiter(EarlyEndsPerSecond, EarlyEndsBurst), box: s.penalties}
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]*Entry{}
	}
	s.m[c.RemoteAddr().String()] = e
	s.mu.Unlock()
	return e
}

func (s *Set) remove(c net.Conn) {
	s.mu.Lock()
	if e := s.m[c.RemoteAddr().String()]; e != nil && e.c == c {
		delete(s.m, c.RemoteAddr().String())
	}
	s.mu.Unlock()
}

// Of is the connection a stream's context (its peer) came on; nil when
// it is not in the set (a listener Serve did not wrap). The peer's
// address names it (entryAddr); one that does not is looked up by its
// string.
func (s *Set) Of(ctx context.Context) *Entry {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	if a, ok := p.Addr.(*entryAddr); ok {
		return a.e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[p.Addr.String()]
}

// Close closes the connection for its client's misbehaviour; the
// streams gRPC has yet to read from it are refused at their header, and
// its address is struck once (penaltyBox).
func (e *Entry) Close() {
	if e != nil {
		e.strike()
		_ = e.c.Close()
	}
}

// strike marks the connection cut and strikes its address, once.
func (e *Entry) strike() {
	if e != nil && !e.cut.Swap(true) {
		e.box.strike(hostOf(e.c.RemoteAddr()))
	}
}

// Closed reports whether Close was called.
func (e *Entry) Closed() bool { return e != nil && e.cut.Load() }

// EndedEarly counts a stream that ended before its first message, and
// closes the connection once it is over its budget.
func (e *Entry) EndedEarly() {
	if e != nil && !e.early.Allow() {
		e.Close()
	}
}

// NewListener caps ln at maxConns connections and admits none of an
// address under penalty; each connection it gives is an rpcConn, its
// writes bounded by writeTimeout (0: none: gRPC sets no write deadline,
// so a client that reads nothing at all would stall the connection's
// writer, with every answer queued behind it) and its messages charged
// as they arrive by the wire newWire makes for it (see Wire).
func NewListener(ln net.Listener, maxConns int, conns *Set, writeTimeout time.Duration, newWire func() *Wire) *conncap.Listener {
	l := conncap.New(ln, maxConns, overCapAnswer(maxConns))
	l.Admit = func(c net.Conn) []byte {
		if !conns.penalties.admit(hostOf(c.RemoteAddr())) {
			return penalisedAnswer
		}
		return nil
	}
	l.Wrap = func(c *conncap.Conn) net.Conn {
		rc := &rpcConn{Conn: c, conns: conns, writeTimeout: writeTimeout, wire: newWire()}
		rc.entry = conns.Add(rc)
		rc.addr = &entryAddr{Addr: c.RemoteAddr(), e: rc.entry}
		return rc
	}
	return l
}

// overCapAnswer is the server preface and GOAWAY a connection over the
// cap gets.
func overCapAnswer(maxConns int) []byte {
	return goAwayAnswer(http2.ErrCodeRefusedStream, "server busy: "+strconv.Itoa(maxConns)+
		" gRPC connections are open (grpc.max_connections); retry later")
}

// penalisedAnswer is what a new connection of a penalised address gets
// (penaltyBox): ENHANCE_YOUR_CALM, as for too many pings.
var penalisedAnswer = goAwayAnswer(http2.ErrCodeEnhanceYourCalm, "connections from this address were closed "+
	"for misbehaviour (streams reset before their message, pings too often, answers not taken): new ones are admitted at a "+
	"reduced rate for a while (grpc.abuse_penalty); retry later")

// goAwayAnswer is the server preface and a GOAWAY with code and why.
func goAwayAnswer(code http2.ErrCode, why string) []byte {
	var b bytes.Buffer
	f := http2.NewFramer(&b, nil)
	_ = f.WriteSettings()
	_ = f.WriteGoAway(0, code, []byte(why))
	return b.Bytes()
}

// rpcConn is a connection of the listener: its writes are bounded,
// its messages charged as they arrive (Wire), and it leaves conns at its
// first Close.
type rpcConn struct {
	*conncap.Conn
	conns        *Set
	writeTimeout time.Duration
	entry        *Entry
	addr         *entryAddr // its remote address, carrying entry (nil until Add)
	wire         *Wire
	once         sync.Once
}

// entryAddr is a connection's remote address, carrying its Entry: gRPC
// gives each stream's context the address the connection reports
// (peer.Peer), so Set.Of finds the stream's connection there, without
// formatting the address and looking it up under the Set's lock on
// every RPC (issue 33). It prints and compares as the address it wraps.
type entryAddr struct {
	net.Addr
	e *Entry
}

// RemoteAddr is the client's address, carrying the connection's Entry
// once Add has made it.
func (c *rpcConn) RemoteAddr() net.Addr {
	if c.addr == nil {
		return c.Conn.RemoteAddr()
	}
	return c.addr
}

// Read hands gRPC the client's bytes, each message they declare charged
// (see Wire): first it waits for room for the messages the last read
// left owing; it fails, and gRPC closes the connection, when there is
// none in time.
func (c *rpcConn) Read(b []byte) (int, error) {
	if err := c.wire.await(); err != nil {
		c.wire.close()
		return 0, err
	}
	n, err := c.Conn.Read(b)
	if werr := c.wire.read(b[:n]); werr != nil {
		c.wire.close()
		return 0, werr
	}
	if err != nil {
		c.wire.close()
	}
	return n, err
}

// Write fails once the client has taken nothing for the write timeout:
// gRPC then closes the connection. A write that ends in gRPC's GOAWAY
// for too many pings (see pingFloodTail) closes it for misbehaviour.
func (c *rpcConn) Write(b []byte) (int, error) {
	if c.writeTimeout > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	}
	flood := bytes.HasSuffix(b, pingFloodTail)
	if flood {
		// Struck before the GOAWAY leaves: a client that redials as soon
		// as it reads it must find its address penalised.
		c.entry.strike()
	}
	n, err := c.Conn.Write(b)
	c.wire.wrote(b[:n])
	if flood {
		c.entry.Close()
	}
	return n, err
}

// pingFloodTail is how the last write grpc-go makes to a connection that
// pinged too often ends: its GOAWAY's code (ENHANCE_YOUR_CALM) and debug
// data, flushed just before it closes the connection (grpc-go's
// http2Server.outgoingGoAwayHandler). gRPC tells the server of no such
// closure otherwise, and without it a ping flood's redials would not be
// penalised; matching the end of each write costs a compare of 18 bytes.
// grpcfront's TestPingFloodPenalisesTheAddress catches a grpc-go that changes it.
var pingFloodTail = append([]byte{0, 0, 0, byte(http2.ErrCodeEnhanceYourCalm)}, "too_many_pings"...)

func (c *rpcConn) Close() error {
	err := c.Conn.Close()
	c.wire.close()
	c.entry.dropAnswers()
	c.once.Do(func() { c.conns.remove(c) })
	return err
}
