package decodecost

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// Of weighs what decoding allocates, at least the decoded
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
		{"int64 zeros", &pb.ModelInferRequest{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "INT64",
			Shape: []int64{10000}, Contents: &pb.InferTensorContents{Int64Contents: make([]int64, 10000)}}}}, 80000, 80000 + 1024, true},
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
		n := Of(b)
		if n < c.lo || n > c.hi {
			t.Errorf("%s: cost %d, want %d to %d (message %d bytes)", c.name, n, c.lo, c.hi, len(b))
		}
		if c.wireLess && int64(len(b)) >= c.lo {
			t.Errorf("%s: message %d bytes is no bomb", c.name, len(b))
		}
	}
}
