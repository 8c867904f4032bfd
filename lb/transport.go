package lb

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// transport is every backend's fasthttp.RoundTripper. A request with no
// watch (the map misses) takes fasthttp's DefaultTransport; a watched one
// takes roundTrip, which is the same exchange made with the connection in
// hand, so that the watch can close it (fasthttp's transport does not say
// which connection a request got). Watched requests never stream their
// response and the backends' clients set no MaxConnDuration and leave
// header names normalized, the DefaultTransport features roundTrip
// leaves out (TestRoundTripCoversTheBackendsClient).
type transport struct {
	watches *sync.Map // *fasthttp.Request -> *watch, while DoRouteFor runs
}

func (t transport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	v, ok := t.watches.Load(req)
	if !ok {
		return fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
	}
	return roundTrip(hc, req, resp, v.(*watch))
}

// roundTrip sends req on a connection of hc's pool that w may close, and
// reads the answer into resp. A connection w closed is never pooled
// again.
func roundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response, w *watch) (retry bool, err error) {
	cc, err := hc.AcquireConn(time.Until(w.deadline), req.ConnectionClose())
	if err != nil {
		return false, err
	}
	conn := cc.Conn()
	if !w.use(conn) {
		hc.ReleaseConn(cc) // unused: still good
		return false, ErrClientGone
	}
	resp.ParseNetConn(conn)
	retry, err = exchange(hc, conn, req, resp, w.deadline)
	closed := w.unuse()
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
// ErrTimeout.
func exchange(hc *fasthttp.HostClient, conn net.Conn, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) (retry bool, err error) {
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
	err = resp.ReadLimitBody(br, hc.MaxResponseBodySize)
	hc.ReleaseReader(br)
	return err != nil && !errors.Is(err, fasthttp.ErrBodyTooLarge), err
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
