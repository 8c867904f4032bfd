package lb

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// TestContextClientClosesTheUpstreamAtOnce: an RPC's request
// (ContextClient) has its upstream connection closed the moment its
// context is cancelled, not at the next poll as when its context was
// polled (GoneFunc, the figure logged for comparison); DoRouteFor then
// returns ErrClientGone.
func TestContextClientClosesTheUpstreamAtOnce(t *testing.T) {
	for _, c := range []struct {
		name   string
		client func(context.Context) Client
		atOnce bool
	}{
		{"watched", func(ctx context.Context) Client { return ContextClient{Ctx: ctx} }, true},
		{"polled", func(ctx context.Context) Client { return GoneFunc(func() bool { return ctx.Err() != nil }) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			took := cancelToClose(t, c.client)
			t.Logf("%s: upstream closed %s after the RPC's cancel", c.name, took)
			if c.atOnce && took >= ClientPoll {
				t.Errorf("the upstream connection was closed %s after the cancel, want at once (under a poll, %s)", took, ClientPoll)
			}
		})
	}
}

// cancelToClose sends a request whose Client is client(ctx) to a backend
// that waits for its connection's close, cancels ctx once the request
// has reached it, and returns how long the backend then waited for the
// close.
func cancelToClose(t *testing.T, client func(context.Context) Client) time.Duration {
	arrived, saw := make(chan struct{}, 1), make(chan error, 1)
	be := startBackend(t, shortDir(t), "a", hangupHandler(arrived, saw))
	p := New(Options{})
	p.SetBackends([]Backend{be.Backend})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sendToClient(p, "http://lb/v2/models/m/infer", client(ctx)) }()
	recv(t, arrived, "the request to reach the backend")
	start := time.Now()
	cancel()
	if err := recv(t, saw, "the backend's read"); !errors.Is(err, io.EOF) {
		t.Errorf("the backend read %v, want EOF: the upstream connection was not closed", err)
	}
	took := time.Since(start)
	if err := recv(t, done, "DoRouteFor"); !errors.Is(err, ErrClientGone) {
		t.Errorf("DoRouteFor = %v, want ErrClientGone", err)
	}
	return took
}

// TestContextClientStopWaitsForItsCallback: a context that has already
// ended calls back on another goroutine (the lb holds its lock across
// Watch, which the callback takes), and stop returns only once the
// callback has; a stopped watch never calls back.
func TestContextClientStopWaitsForItsCallback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	entered, release := make(chan struct{}), make(chan struct{})
	returned := false
	stop, err := ContextClient{Ctx: ctx}.Watch(func() {
		close(entered)
		<-release
		returned = true
	})
	if err != nil {
		t.Fatalf("Watch = %v, want a watch", err)
	}
	recv(t, entered, "the callback of an ended context")
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("stop returned while the callback ran")
	case <-time.After(10 * time.Millisecond):
	}
	close(release)
	recv(t, stopped, "stop, once the callback returned")
	if !returned {
		t.Error("stop returned before the callback did")
	}
	live, cancelLive := context.WithCancel(context.Background())
	stop, _ = ContextClient{Ctx: live}.Watch(func() { t.Error("a stopped watch called back") })
	stop()
	cancelLive()
}
