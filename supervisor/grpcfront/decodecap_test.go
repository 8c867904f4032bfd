package grpcfront

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// int64Request is a request whose one INT64 input has n zeros in
// int64_contents: one byte each on the wire, eight decoded.
func int64Request(n int) *pb.ModelInferRequest {
	return &pb.ModelInferRequest{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "INT64",
		Shape: []int64{int64(n)}, Contents: &pb.InferTensorContents{Int64Contents: make([]int64, n)}}}}
}

// A ModelInferRequest that would decode past MaxMessageBytes is refused
// before it is decoded, with a message that says why; one within it is
// served.
func TestDecodeBombIsRefusedBeforeDecoding(t *testing.T) {
	var handled atomic.Int32
	c := serve(t, Options{MaxMessageBytes: 1 << 20, Handler: func(rpc context.Context, ctx *fasthttp.RequestCtx) {
		handled.Add(1)
		inferAnswer(rpc, ctx)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// 200k zeros: 200 KiB on the wire, 1.6 MB decoded.
	_, err := c.ModelInfer(ctx, int64Request(200000))
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), ErrDecodedTooLarge.Error()) || handled.Load() != 0 {
		t.Fatalf("a decode bomb: %v (handled %d), want INTERNAL %q before the Handler", err, handled.Load(), ErrDecodedTooLarge)
	}
	if _, err := c.ModelInfer(ctx, int64Request(100000)); err != nil || handled.Load() != 1 {
		t.Fatalf("800 KB decoded, under 1 MiB: %v (handled %d)", err, handled.Load())
	}
}
