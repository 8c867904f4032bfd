package hangup

import (
	"errors"
	"testing"
)

// TestOneSocketWatchedRequestAfterRequest: a keep-alive connection (the
// master's to a prep worker, a prep worker's to an infer worker) is
// watched for each request it carries, one after the other. A watch
// cancelled at its answer leaves the socket free for the next request's,
// which still sees the hang-up; a second watch of a socket already watched
// (never made by one connection's sequential requests) is refused with
// ErrUnwatchable, so its caller polls, and leaves no registration behind.
func TestOneSocketWatchedRequestAfterRequest(t *testing.T) {
	w := watcher(t)
	p := dialPair(t, "tcp")
	before := w.Watching()
	for i := range 3 {
		cancel, err := w.Watch(p.server, func() { t.Errorf("request %d: onGone ran, but the peer stayed", i) })
		if err != nil {
			t.Fatalf("request %d on the same connection: %v", i, err)
		}
		cancel()
	}
	gone, _ := watch(t, w, p.server)
	if _, err := w.Watch(p.server, func() {}); !errors.Is(err, ErrUnwatchable) {
		t.Errorf("a second watch of a watched socket: %v, want ErrUnwatchable", err)
	}
	if n := w.Watching(); n != before+1 {
		t.Errorf("%d registrations with one watch on, want %d: the refused one stayed", n, before+1)
	}
	p.client.Close()
	waitGone(t, gone, "the last request's watch, after its peer closed")
	if n := w.Watching(); n != before {
		t.Errorf("%d registrations after the event, want %d", n, before)
	}
}
