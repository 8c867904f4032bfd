package drain

import (
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// QuietFor is how long a connection must have been between requests
// before a drain that hands over (an upgrade) closes it rather than wait
// ClientGrace for its client to leave. An idle keep-alive client (a
// pooled connection, a load balancer's) never leaves on its own within
// ClientGrace, so waiting for it only delayed the old master's exit by
// the whole grace (and the upgrade that waits for it); nginx closes such
// connections at once on a graceful stop. A client between requests of a
// busy loop is asked to close by its next answer instead: closing under
// it could lose the request it is writing. Past QuietFor of silence, a
// request crossing the close is as unlikely as at any later moment.
const QuietFor = time.Second

// Quiet records, for each open connection of a fasthttp.Server (fed by
// its ConnState hook, Track), since when it has been between requests.
// The zero value is ready.
type Quiet struct {
	mu    sync.Mutex
	since map[net.Conn]time.Time // zero: a request is being served
}

// Track is the ConnState hook's part: a connection is quiet from its
// accept and from the end of each request, busy while one is served.
func (q *Quiet) Track(c net.Conn, st fasthttp.ConnState) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.since == nil {
		q.since = make(map[net.Conn]time.Time)
	}
	switch st {
	case fasthttp.StateNew, fasthttp.StateIdle:
		q.since[c] = time.Now()
	case fasthttp.StateActive:
		q.since[c] = time.Time{}
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		delete(q.since, c)
	}
}

// AllQuietFor reports whether every open connection has been between
// requests for at least d.
func (q *Quiet) AllQuietFor(d time.Duration) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, since := range q.since {
		if since.IsZero() || time.Since(since) < d {
			return false
		}
	}
	return true
}
