// Package drain holds what the master's public listener and the workers
// share when they stop serving: waiting for clients to leave on their own.
package drain

import (
	"time"

	"github.com/valyala/fasthttp"
)

// ClientGrace is how long a draining server waits for its clients to close
// their keep-alive connections before closing the idle ones itself.
const ClientGrace = 5 * time.Second

// WaitForClientsToLeave keeps srv serving until its clients have closed
// their connections, at most grace. Closing an idle keep-alive connection
// from the server side races with a client that has just written a request
// on it: that request would be lost. A client that is told to close (its
// next response carries "Connection: close") or that has dropped the
// server from its pool leaves without that race. enough (nil: never)
// ends the wait early, when closing the rest is safe enough: see QuietFor.
func WaitForClientsToLeave(srv *fasthttp.Server, grace time.Duration, enough func() bool) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(grace)
	for srv.GetOpenConnectionsCount() > 0 && (enough == nil || !enough()) {
		select {
		case <-tick.C:
		case <-deadline:
			return
		}
	}
}
