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

// TestReleasedExchangeKeepsItsAnswer: an exchange goes back to the pool
// once its RPC is answered, while the answer's bytes live on (an infer
// answer's outputs alias them until gRPC sends them): the next RPC's
// answer must not be written over them.
func TestReleasedExchangeKeepsItsAnswer(t *testing.T) {
	answer := func(body string) []byte {
		x, err := newExchange(context.Background(), fasthttp.MethodPost, "/v2/models/m/infer")
		if err != nil {
			t.Fatal(err)
		}
		defer x.release()
		_, got, err := x.do(context.Background(), func(_ context.Context, c *fasthttp.RequestCtx) {
			c.Response.SetBodyString(body)
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := answer("first answer")
	for range 10 { // the pool may drop an exchange; ten chances to reuse one
		answer("later answer")
	}
	if string(first) != "first answer" {
		t.Errorf("the first answer reads %q after later exchanges; want it untouched", first)
	}
}

// TestExchangeReusesItsHeaders: a pooled exchange does not allocate its
// request's and answer's header tables anew per RPC (before issue 33
// each RPC built a fresh fasthttp.Request and Response: 17 allocations
// here; none now, a few under -race, whose sync.Pool drops some Puts).
func TestExchangeReusesItsHeaders(t *testing.T) {
	ctx := context.Background()
	body := []byte(`{"inputs":[]}`)
	rpc := func() {
		x, err := newExchange(ctx, fasthttp.MethodPost, "/v2/models/m/infer")
		if err != nil {
			t.Fatal(err)
		}
		x.setBody(body, len(body))
		_, _, _ = x.do(ctx, func(_ context.Context, c *fasthttp.RequestCtx) {
			c.Response.Header.Set(headerLenHeader, "13")
		})
		x.release()
	}
	rpc()
	if n := testing.AllocsPerRun(100, rpc); n > 6 {
		t.Errorf("%.0f allocations per exchange; want at most 6 (its headers reused)", n)
	}
}
