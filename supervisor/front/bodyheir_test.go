package front

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront"
)

// floodBodies keeps the budget busy as other clients' small bodies do,
// until ctx ends: each of n takes 1 MiB whenever it fits, holds it 3ms
// and gives it back.
func floodBodies(ctx context.Context, f *Front, n int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			t := time.NewTimer(0)
			defer t.Stop()
			for ctx.Err() == nil {
				took, err := f.adm.Bodies().Reserve(1<<20, 1<<20)
				hold := 200 * time.Microsecond
				if err == nil {
					hold = 3 * time.Millisecond
				}
				t.Reset(hold)
				select {
				case <-t.C:
				case <-ctx.Done():
				}
				took.Release()
			}
		})
	}
	return &wg
}

// A large gRPC message gets in while small bodies keep taking the room
// it needs the moment it frees: eight 1 MiB bodies, each held 3ms and
// taken again at once, keep the 8 MiB budget full, so a 4 MiB message
// that polls needs four of them given back at the instant it looks, and
// waited out body_timeout (3s). Waiting first in the large lane (a
// budget Heir lane: admission.Bodies), the room it lacks is kept from
// them, and what they give back is its (about 0.1s a message here).
// Once the flood is over, the budget holds nothing and nobody waits.
func TestLargeGRPCMessageIsNotStarvedBySmallBodies(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.MaxBodyBytes = 4 << 20
	cfg.Limits.MaxBodyBytesInFlight = 8 << 20
	f, _, _ := newTestFront(cfg)
	c := serveGRPC(t, grpcfront.Options{Budget: f.adm, MaxMessageBytes: 4 << 20,
		Timeouts: grpcfront.Timeouts{Message: 3 * time.Second, StreamIdle: time.Minute, Write: 10 * time.Second},
		Handler: func(_ context.Context, ctx *fasthttp.RequestCtx) {
			ctx.Response.Header.Set("Inference-Header-Content-Length", "31")
			ctx.SetBodyString(`{"model_name":"m","outputs":[]}`)
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fctx, stop := context.WithCancel(ctx)
	wg := floodBodies(fctx, f, 8)
	defer func() { stop(); wg.Wait() }()
	n := 4<<20 - 1024
	req := &pb.ModelInferRequest{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "UINT8", Shape: []int64{int64(n)}}},
		RawInputContents: [][]byte{make([]byte, n)}}
	for i := range 3 {
		start := time.Now()
		if _, err := c.ModelInfer(ctx, req); err != nil {
			t.Fatalf("large message %d, after %v under the flood: %v", i, time.Since(start).Round(time.Millisecond), err)
		}
	}
	stop()
	wg.Wait()
	b := f.adm.Bodies()
	polltest.Until(t, 10*time.Second, 10*time.Millisecond, "the body budget back at zero after the flood", func() bool {
		return b.InUse() == 0 && b.Large() == 0 && b.Waiting() == 0
	})
}

// serveGRPC serves o on loopback and returns a client of it.
func serveGRPC(t *testing.T, o grpcfront.Options) pb.GRPCInferenceServiceClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpcfront.New(o)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Stop(ctx)
	})
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewGRPCInferenceServiceClient(conn)
}
