package lb

import (
	"errors"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/handoff"
)

// transport is every backend's fasthttp.RoundTripper. A request with
// neither a watch nor an answer gate (the map misses) takes fasthttp's
// DefaultTransport; any other takes roundTrip, which is the same exchange
// made with the connection in hand, so that the watch can close it
// (fasthttp's transport does not say which connection a request got),
// and with the answer read in two steps, so that the gate can refuse it
// between its header and its body (answergate.go). They never stream their
// response and the backends' clients set no MaxConnDuration and leave
// header names normalized, the DefaultTransport features roundTrip
// leaves out (TestRoundTripCoversTheBackendsClient).
type transport struct {
	exchanges *handoff.Map[fasthttp.Request, *upstream] // while DoRouteFor runs
}

// upstream is what DoRouteFor gives the transport for one request.
type upstream struct {
	deadline time.Time  // DoRouteFor's
	w        *watch     // nil: the client is not watched
	gate     AnswerGate // nil: every answer is read
}

func (t transport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	u, ok := t.exchanges.Load(req)
	if !ok {
		return fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
	}
	return roundTrip(hc, req, resp, u)
}

// roundTrip sends req on a connection of hc's pool that u's watch may
// close, and reads the answer into resp, unless u's gate refuses it. A
// connection closed by the watch, or under a refused answer, is never
// pooled again.
func roundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response, u *upstream) (retry bool, err error) {
	cc, err := hc.AcquireConn(time.Until(u.deadline), req.ConnectionClose())
	if err != nil {
		return false, err
	}
	conn := cc.Conn()
	if u.w != nil && !u.w.use(conn) {
		hc.ReleaseConn(cc) // unused: still good
		return false, ErrClientGone
	}
	resp.ParseNetConn(conn)
	retry, err = exchange(hc, conn, req, resp, u.deadline, u.gate)
	closed := u.w != nil && u.w.unuse()
	if err != nil || closed || req.ConnectionClose() || resp.ConnectionClose() {
		hc.CloseConn(cc)
	} else {
		hc.ReleaseConn(cc)
	}
	return retry, err
}

// exchange writes req on conn and reads the answer, as fasthttp's
// DefaultTransport does: each direction bounded by the earlier of
// deadline and hc's own timeout for it, a write timeout reported as
// ErrTimeout; gate (nil: none) is asked about the answer before its body.
func exchange(hc *fasthttp.HostClient, conn net.Conn, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time, gate AnswerGate) (retry bool, err error) {
	if err := conn.SetWriteDeadline(earlier(deadline, hc.WriteTimeout)); err != nil {
		return true, err
	}
	bw := hc.AcquireWriter(conn)
	err = req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	if err != nil {
		if isTimeout(err) {
			err = fasthttp.ErrTimeout
		}
		return true, err
	}
	if err := conn.SetReadDeadline(earlier(deadline, hc.ReadTimeout)); err != nil {
		return true, err
	}
	if req.Header.IsHead() {
		resp.SkipBody = true
	}
	br := hc.AcquireReader(conn)
	err = readAnswer(br, resp, hc.MaxResponseBodySize, gate)
	hc.ReleaseReader(br)
	return err != nil && !errors.Is(err, fasthttp.ErrBodyTooLarge) && !errors.Is(err, ErrAnswerRefused), err
}

// earlier is the earlier of deadline and now+d (d <= 0: deadline).
func earlier(deadline time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return deadline
	}
	if t := time.Now().Add(d); deadline.IsZero() || t.Before(deadline) {
		return t
	}
	return deadline
}
