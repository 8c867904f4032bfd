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
	"google.golang.org/protobuf/proto"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// int64Request is a request whose one INT64 input has n zeros in
// int64_contents: one byte each on the wire, eight decoded.
func int64Request(n int) *pb.ModelInferRequest {
	return &pb.ModelInferRequest{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "INT64",
		Shape: []int64{int64(n)}, Contents: &pb.InferTensorContents{Int64Contents: make([]int64, n)}}}}
}

// decodedCost weighs what decoding allocates, at least the decoded
// elements' and bytes' sizes, however few bytes they take on the wire.
func TestDecodedCostCountsWhatDecodingAllocates(t *testing.T) {
	raw := &pb.ModelInferRequest{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "UINT8", Shape: []int64{4096}}},
		RawInputContents: [][]byte{make([]byte, 4096)}}
	cases := []struct {
		name     string
		r        *pb.ModelInferRequest
		lo, hi   int64 // bounds of the cost
		wireLess bool  // the message is smaller than the cost's lower bound
	}{
		{"raw", raw, 4096, 4096 + 1024, false},
		{"int64 zeros", int64Request(10000), 80000, 80000 + 1024, true},
		{"empty BYTES", &pb.ModelInferRequest{Inputs: []*pb.ModelInferRequest_InferInputTensor{{Datatype: "BYTES",
			Contents: &pb.InferTensorContents{BytesContents: make([][]byte, 10000)}}}}, 240000, 240000 + 1024, true},
		{"empty inputs", &pb.ModelInferRequest{Inputs: make([]*pb.ModelInferRequest_InferInputTensor, 1000)}, 256000, 256000 + 1024, true},
		{"fp32", &pb.ModelInferRequest{Inputs: []*pb.ModelInferRequest_InferInputTensor{{Datatype: "FP32",
			Contents: &pb.InferTensorContents{Fp32Contents: make([]float32, 1000)}}}}, 4000, 4000 + 1024, false},
	}
	for _, c := range cases {
		b, err := proto.Marshal(c.r)
		if err != nil {
			t.Fatal(err)
		}
		n := decodedCost(b)
		if n < c.lo || n > c.hi {
			t.Errorf("%s: cost %d, want %d to %d (message %d bytes)", c.name, n, c.lo, c.hi, len(b))
		}
		if c.wireLess && int64(len(b)) >= c.lo {
			t.Errorf("%s: message %d bytes is no bomb", c.name, len(b))
		}
	}
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
