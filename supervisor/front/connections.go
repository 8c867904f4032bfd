package front

import (
	"net"

	"github.com/valyala/fasthttp"
)

// connBurst: after a flood of at least this many connections (idle ones,
// slowloris) has gone, the memory their goroutines and buffers used is
// handed back to the OS (internal/osmem).
const connBurst = 1000

// connState is the public server's ConnState hook: it counts open
// connections so that the memory of a connection flood goes back to the
// OS once the flood is over.
func (f *Front) connState(_ net.Conn, st fasthttp.ConnState) {
	switch st {
	case fasthttp.StateNew:
		f.conns.Add(1, connBurst)
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		f.conns.Add(-1, connBurst)
	}
}
