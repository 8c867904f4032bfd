package grpcfront

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// serve starts a Server with o on loopback and returns a client of it.
func serve(t testing.TB, o Options) pb.GRPCInferenceServiceClient {
	t.Helper()
	_, addr := listen(t, o)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewGRPCInferenceServiceClient(conn)
}

// Admit refuses an inference RPC before its message reaches the Handler,
// with the code its answer maps to, and leaves the other RPCs alone.
func TestAdmitRefusesBeforeTheMessage(t *testing.T) {
	var admitted, handled atomic.Int32
	c := serve(t, Options{
		Handler: func(_ context.Context, ctx *fasthttp.RequestCtx) {
			handled.Add(1)
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
			ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
		},
		Admit: func(h *fasthttp.RequestHeader) (int, string, bool) {
			admitted.Add(1)
			switch string(h.Peek("X-API-Key")) {
			case "good":
				return fasthttp.StatusOK, "", false
			case "busy":
				return fasthttp.StatusServiceUnavailable, "busy", true
			}
			return fasthttp.StatusUnauthorized, "missing API key", false
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	big := &pb.ModelInferRequest{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "UINT8", Shape: []int64{1 << 20}}},
		RawInputContents: [][]byte{make([]byte, 1<<20)}}
	for key, want := range map[string]codes.Code{"": codes.Unauthenticated, "busy": codes.ResourceExhausted} {
		_, err := c.ModelInfer(metadata.AppendToOutgoingContext(ctx, "x-api-key", key), big)
		if status.Code(err) != want {
			t.Errorf("key %q: %v, want %s", key, err, want)
		}
	}
	s, err := c.ModelStreamInfer(ctx)
	if err == nil {
		_, err = s.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("a stream without a key: %v, want UNAUTHENTICATED", err)
	}
	if handled.Load() != 0 {
		t.Fatalf("the Handler saw %d refused RPCs", handled.Load())
	}
	// Admitted: the Handler decides (here: busy, with Retry-After).
	if _, err := c.ModelInfer(metadata.AppendToOutgoingContext(ctx, "x-api-key", "good"), big); status.Code(err) != codes.ResourceExhausted || handled.Load() != 1 {
		t.Errorf("an admitted RPC: %v (handled %d), want the Handler's RESOURCE_EXHAUSTED", err, handled.Load())
	}
	// Not an inference RPC: Admit is not asked.
	before := admitted.Load()
	if _, err := c.ServerReady(ctx, &pb.ServerReadyRequest{}); err != nil || admitted.Load() != before {
		t.Errorf("ServerReady: %v, Admit asked %d times", err, admitted.Load()-before)
	}
}
