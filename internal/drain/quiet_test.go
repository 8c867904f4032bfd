package drain

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestQuietFollowsTheConnections: a connection is quiet from its accept
// and from each request's end, busy while one is served, and forgotten
// once closed.
func TestQuietFollowsTheConnections(t *testing.T) {
	var q Quiet
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if !q.AllQuietFor(time.Hour) {
		t.Fatal("no connection: want quiet")
	}
	q.Track(a, fasthttp.StateNew)
	if q.AllQuietFor(time.Hour) || !q.AllQuietFor(0) {
		t.Fatal("a connection just accepted: want quiet for 0, not for an hour")
	}
	q.Track(b, fasthttp.StateNew)
	q.Track(b, fasthttp.StateActive)
	if q.AllQuietFor(0) {
		t.Fatal("a connection serving a request: want not quiet")
	}
	q.Track(b, fasthttp.StateIdle)
	if !q.AllQuietFor(0) {
		t.Fatal("both between requests: want quiet for 0")
	}
	q.Track(a, fasthttp.StateClosed)
	q.Track(b, fasthttp.StateHijacked)
	if !q.AllQuietFor(time.Hour) {
		t.Fatal("both gone: want quiet")
	}
}
