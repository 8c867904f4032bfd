package lb

import (
	"net"
	"sync/atomic"
	"time"
)

// Every exchange on a pooled backend connection bounds its write and its
// read with a deadline (fasthttp's transport and exchange, transport.go),
// each one a runtime timer moved in the poller: about 150 ns on an idle
// box, more when the timer sits in another P's heap, and two per request
// for a deadline that is, request after request, "now plus the proxy's
// timeout" (60 s by default). nginx reads the clock once per event loop
// and keeps its timers in a tree; lazyDeadlineConn gets most of that: a
// deadline is armed a little later than asked (deadlineSlack), and a
// later ask that the armed deadline already covers within that slack
// moves nothing. A connection serving request after request re-arms
// each direction about once a second, not twice a request.
//
// The guarantee each timeout keeps: it never fires earlier than asked,
// and at most min(maxDeadlineSlack, 1/16 of the time asked for) later
// (60 s: 1 s; the 200 ms of a short proxy timeout: 12.5 ms). A deadline
// earlier than the armed one beyond the slack (a request with a shorter
// deadline of its own) re-arms at once, and so does clearing it.
const maxDeadlineSlack = time.Second

// deadlinesArmed counts the deadlines lazyDeadlineConns have armed on
// their connections (BenchmarkWatch reports it per request).
var deadlinesArmed atomic.Int64

// deadlineSlack is how much later than t a deadline asked at now for t
// may fire.
func deadlineSlack(now, t time.Time) time.Duration {
	return max(0, min(maxDeadlineSlack, t.Sub(now)/16))
}

// lazyDeadlineConn is a connection whose deadlines move only when the
// armed one does not already cover the one asked for (see above). Its
// deadlines are its own: nothing else may set them on the connection
// underneath, and one goroutine at a time sets each direction's (the
// exchange that holds the connection).
type lazyDeadlineConn struct {
	net.Conn
	read, write atomic.Int64 // armed deadline, Unix ns; 0: none
}

func (c *lazyDeadlineConn) SetReadDeadline(t time.Time) error {
	return lazySet(&c.read, t, c.Conn.SetReadDeadline)
}

func (c *lazyDeadlineConn) SetWriteDeadline(t time.Time) error {
	return lazySet(&c.write, t, c.Conn.SetWriteDeadline)
}

func (c *lazyDeadlineConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// lazySet arms t (plus its slack) with set, unless armed already holds
// a deadline no earlier than t and within t's slack.
func lazySet(armed *atomic.Int64, t time.Time, set func(time.Time) error) error {
	a := armed.Load()
	if t.IsZero() {
		if a == 0 {
			return nil
		}
		armed.Store(0)
		deadlinesArmed.Add(1)
		return set(t)
	}
	now := time.Now()
	want, slack := t.UnixNano(), deadlineSlack(now, t)
	if a != 0 && a >= want && a-want <= int64(slack) {
		return nil
	}
	at := t.Add(slack)
	if err := set(at); err != nil {
		armed.Store(0) // unknown: the next ask arms again
		return err
	}
	armed.Store(at.UnixNano())
	deadlinesArmed.Add(1)
	return nil
}
