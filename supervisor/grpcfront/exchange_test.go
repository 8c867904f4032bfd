package grpcfront

import (
	"context"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestHandlerGetsTheRPCsContext: the Handler is given the context of
// the RPC its request was built for, so it sees the RPC's end (a
// client's cancel) and can abandon the request.
func TestHandlerGetsTheRPCsContext(t *testing.T) {
	rpc, cancel := context.WithCancel(context.Background())
	x, err := newExchange(rpc, fasthttp.MethodPost, "/v2/models/m/infer")
	if err != nil {
		t.Fatal(err)
	}
	var got context.Context
	_, _, _ = x.do(rpc, func(c context.Context, _ *fasthttp.RequestCtx) { got = c })
	if got == nil || got.Err() != nil {
		t.Fatalf("Handler got %v; want the RPC's live context", got)
	}
	cancel()
	if got.Err() == nil {
		t.Error("the Handler's RPC context did not end when the RPC was cancelled")
	}
}
