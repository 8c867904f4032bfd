package drain

import (
	"net"
	"sync"
	"sync/atomic"
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
// A request takes a read lock and an atomic store twice (its start and
// end); the write lock is for a connection's accept and close only. The
// zero value is ready.
type Quiet struct {
	mu    sync.RWMutex
	since map[net.Conn]*atomic.Int64 // Unix nanoseconds; 0: a request is being served
}

// Track is the ConnState hook's part: a connection is quiet from its
// accept and from the end of each request, busy while one is served.
func (q *Quiet) Track(c net.Conn, st fasthttp.ConnState) {
	switch st {
	case fasthttp.StateNew:
		v := new(atomic.Int64)
		v.Store(time.Now().UnixNano())
		q.mu.Lock()
		if q.since == nil {
			q.since = make(map[net.Conn]*atomic.Int64)
		}
		q.since[c] = v
		q.mu.Unlock()
	case fasthttp.StateActive, fasthttp.StateIdle:
		q.mu.RLock()
		v := q.since[c]
		q.mu.RUnlock()
		if v == nil {
			return
		}
		if st == fasthttp.StateActive {
			v.Store(0)
		} else {
			v.Store(time.Now().UnixNano())
		}
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		q.mu.Lock()
		delete(q.since, c)
		q.mu.Unlock()
	}
}

// AllQuietFor reports whether every open connection has been between
// requests for at least d.
func (q *Quiet) AllQuietFor(d time.Duration) bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	quietSince := time.Now().Add(-d).UnixNano()
	for _, v := range q.since {
		if t := v.Load(); t == 0 || t > quietSince {
			return false
		}
	}
	return true
}
