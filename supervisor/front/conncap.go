package front

import (
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/supervisor-dev/supervisor/internal/conncap"
	"github.com/supervisor-dev/supervisor/internal/listenstop"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// newCapListener enforces limits.max_connections on the public listener
// itself (conncap), so that a connection over the cap gets the same
// answer as every other refusal: 503 with Retry-After and a V2 error JSON
// body. fasthttp's own cap (Server.Concurrency) answers text/plain and
// cannot be changed; the front server's Concurrency is set above this cap
// so that only this one ever refuses. Its connections (lingerConn) can
// close by lingering (linger.go), and it can stop listening
// (listenstop: for a stop that hands over to no one, as tableflip's
// descriptor would keep the socket listening through the drain; Accept
// then ends with net.ErrClosed. After an upgrade the socket is the new
// master's: never call it then).
func newCapListener(ln net.Listener, maxConns int) *conncap.Listener {
	l := conncap.New(listenstop.Wrap(ln), maxConns, overCapAnswer(maxConns))
	l.Wrap = func(c *conncap.Conn) net.Conn { return newLingerConn(c) }
	return l
}

// overCapAnswer is the whole HTTP response to a connection over the cap.
func overCapAnswer(maxConns int) []byte {
	body := v2.AppendError(nil, "server busy: "+strconv.Itoa(maxConns)+
		" client connections are open (limits.max_connections); retry later")
	return conncap.HTTPBusy("supervisor", "application/json", body)
}

// capConnections wraps the public listener in the max_connections cap;
// refusals, and accepts retried for want of descriptors, are logged at
// most once a minute each, as fasthttp did.
func (f *Front) capConnections(ln net.Listener, maxConns int) *conncap.Listener {
	cl := newCapListener(ln, maxConns)
	var refused, failed minuteGate
	cl.OnRefuse = func(open int64) {
		if refused.open() {
			f.log.Warn().Int64("open", open).Uint64("refused", cl.Refused()).
				Msg("refusing connections over limits.max_connections (503); raise it if these are real clients")
		}
	}
	cl.OnAcceptError = func(err error) {
		if failed.open() {
			f.log.Error().Err(err).Int64("open", cl.Open()).
				Msg("public listener cannot accept: out of file descriptors or memory; retrying. Raise LimitNOFILE (ulimit -n) above limits.max_connections + grpc.max_connections + limits.max_in_flight, or find what holds them")
		}
	}
	return cl
}

// minuteGate lets one event through a minute.
type minuteGate struct{ last atomic.Int64 }

func (g *minuteGate) open() bool {
	now := time.Now().UnixNano()
	prev := g.last.Load()
	return now-prev > int64(time.Minute) && g.last.CompareAndSwap(prev, now)
}
