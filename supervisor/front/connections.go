package front

import (
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// connBurst: after a flood of at least this many connections (idle ones,
// slowloris) has gone, the memory their goroutines and buffers used is
// handed back to the OS (internal/osmem).
const connBurst = 1000

// connState is the public server's ConnState hook: it counts open
// connections so that the memory of a connection flood goes back to the
// OS once the flood is over, and notes since when each is between
// requests (QuietFor).
func (f *Front) connState(c net.Conn, st fasthttp.ConnState) {
	f.quiet.Track(c, st)
	switch st {
	case fasthttp.StateNew:
		f.conns.Add(1, connBurst)
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		f.conns.Add(-1, connBurst)
	}
}

// QuietFor reports whether every open public connection has been between
// requests for at least d: a drain that hands over closes them then
// (drain.QuietFor).
func (f *Front) QuietFor(d time.Duration) bool { return f.quiet.AllQuietFor(d) }
