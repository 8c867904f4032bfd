package grpcfront

import (
	"context"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestRPCContextIsTheRPCs: the request an RPC becomes carries the RPC's
// context, so the Handler sees its end (a client's cancel); a request
// that came another way carries none.
func TestRPCContextIsTheRPCs(t *testing.T) {
	rpc, cancel := context.WithCancel(context.Background())
	x, err := newExchange(rpc, fasthttp.MethodPost, "/v2/models/m/infer")
	if err != nil {
		t.Fatal(err)
	}
	got, ok := RPCContext(&x.ctx)
	if !ok || got.Err() != nil {
		t.Fatalf("RPCContext = %v, %v; want the RPC's live context", got, ok)
	}
	cancel()
	if got.Err() == nil {
		t.Error("the request's RPC context did not end when the RPC was cancelled")
	}
	if _, ok := RPCContext(&fasthttp.RequestCtx{}); ok {
		t.Error("RPCContext found a context on a request no RPC built")
	}
}
