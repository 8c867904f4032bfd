package grpcfront

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// blockingServer serves a Handler that signals each request on entered and
// answers 200 only once release is closed.
func blockingServer(t *testing.T) (s *Server, c pb.GRPCInferenceServiceClient, entered chan string, release chan struct{}) {
	t.Helper()
	entered, release = make(chan string, 8), make(chan struct{})
	s, addr := listen(t, Options{Handler: func(_ context.Context, ctx *fasthttp.RequestCtx) {
		entered <- string(ctx.Path())
		<-release
	}})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return s, pb.NewGRPCInferenceServiceClient(conn), entered, release
}

// listen serves o on a loopback port until the test ends.
func listen(t testing.TB, o Options) (*Server, string) {
	t.Helper()
	s := New(o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve returned %v after Stop, want nil", err)
		}
	})
	return s, ln.Addr().String()
}

func waitEntered(t *testing.T, entered <-chan string, want string) {
	t.Helper()
	select {
	case p := <-entered:
		if p != want {
			t.Fatalf("the handler got %q, want %q", p, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the RPC did not reach the handler in 30s")
	}
}

// Stop lets an RPC in flight finish when it does within the drain.
func TestStopDrains(t *testing.T) {
	s, c, entered, release := blockingServer(t)
	answered := make(chan error, 1)
	go func() {
		_, err := c.ServerLive(context.Background(), &pb.ServerLiveRequest{})
		answered <- err
	}()
	waitEntered(t, entered, "/v2/health/live")
	stopped := make(chan bool, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	close(release)
	if err := <-answered; err != nil {
		t.Errorf("the RPC in flight during Stop failed: %v", err)
	}
	if !<-stopped {
		t.Error("Stop reported an unfinished drain")
	}
}

// Stop gives up on an RPC that outlasts its context: the RPC fails
// UNAVAILABLE and Stop returns, its handler still running.
func TestStopBounded(t *testing.T) {
	s, c, entered, release := blockingServer(t)
	defer close(release)
	answered := make(chan error, 1)
	go func() {
		_, err := c.ServerLive(context.Background(), &pb.ServerLiveRequest{})
		answered <- err
	}()
	waitEntered(t, entered, "/v2/health/live")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan bool, 1)
	go func() { done <- s.Stop(ctx) }()
	select {
	case err := <-answered:
		if status.Code(err) != codes.Unavailable {
			t.Errorf("the RPC cut by Stop: %v, want UNAVAILABLE", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the RPC was not cut within 30s of a 100ms drain")
	}
	// Stop returns without waiting for the handler, still blocked: a
	// handler is bounded by its own deadline (the lb's timeout).
	select {
	case finished := <-done:
		if finished {
			t.Error("Stop reported a finished drain")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stop waited for a blocked handler")
	}
}
