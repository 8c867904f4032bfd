package grpcfront

import (
	"context"
	"testing"

	"github.com/valyala/fasthttp"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// BenchmarkModelInferRPC: unary ModelInfer of the MLP's request (one
// FP32 input of 1x784), client and server in this process over
// loopback, the Handler answering one FP32 output of 1x10 at once: the
// gRPC front's own cost per RPC, without the lb and the workers (issue
// 33). Run with -benchmem, or -cpuprofile to see where it goes:
//
//	go test -run '^$' -bench ModelInferRPC -benchmem -cpuprofile /tmp/cpu.out ./supervisor/grpcfront/
func BenchmarkModelInferRPC(b *testing.B) {
	header := `{"model_name":"mlp","outputs":[{"name":"y","datatype":"FP32","shape":[1,10],"parameters":{"binary_data_size":40}}]}`
	answer := append([]byte(header), make([]byte, 40)...)
	hlen := []byte{}
	hlen = fasthttp.AppendUint(hlen, len(header))
	c := serve(b, Options{Handler: func(_ context.Context, ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.SetBytesV(headerLenHeader, hlen)
		ctx.Response.SetBodyRaw(answer)
	}})
	req := &pb.ModelInferRequest{ModelName: "mlp",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1, 784}}},
		RawInputContents: [][]byte{make([]byte, 784*4)}}
	ctx := context.Background()
	for b.Loop() {
		resp, err := c.ModelInfer(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.RawOutputContents) != 1 || len(resp.RawOutputContents[0]) != 40 {
			b.Fatalf("answer has %d outputs", len(resp.RawOutputContents))
		}
	}
}
