package grpcfront

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// countingPool is a BufferPool that counts the buffers handed back.
type countingPool struct{ puts int }

func (p *countingPool) Get(n int) *[]byte { b := make([]byte, n); return &b }
func (p *countingPool) Put(*[]byte)       { p.puts++ }

// inferSpy is a service whose ModelInfer records what it saw.
type inferSpy struct {
	pb.UnimplementedGRPCInferenceServiceServer
	pool     *countingPool
	raw      []byte
	putsSeen int
}

func (s *inferSpy) ModelInfer(_ context.Context, r *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	s.putsSeen = s.pool.puts
	s.raw = bytes.Clone(r.GetRawInputContents()[0])
	return &pb.ModelInferResponse{}, nil
}

// The buffer a ModelInfer request was received in goes back to its pool
// only once ModelInfer has returned, through an interceptor too: gRPC
// frees its own reference when the codec returns, and the request's
// raw_input_contents point into the buffer until then.
func TestModelInferHoldsItsBufferUntilItReturns(t *testing.T) {
	tensor := bytes.Repeat([]byte{7, 8, 9}, 1000)
	msg, err := proto.Marshal(&pb.ModelInferRequest{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x"}},
		RawInputContents: [][]byte{tensor}})
	if err != nil {
		t.Fatal(err)
	}
	codec := newDecodeCap(1 << 30)
	for _, ic := range []grpc.UnaryServerInterceptor{nil, Timeouts{}.unaryWatch} {
		pool := &countingPool{}
		spy := &inferSpy{pool: pool}
		dec := func(v any) error { // as gRPC's server: the codec, then its own reference freed
			data := mem.BufferSlice{mem.NewBuffer(&msg, pool)}
			defer data.Free()
			return codec.Unmarshal(data, v)
		}
		if _, err := modelInferHandler(spy, context.Background(), dec, ic); err != nil {
			t.Fatal(err)
		}
		if spy.putsSeen != 0 || !bytes.Equal(spy.raw, tensor) {
			t.Errorf("ModelInfer saw %d buffers freed and %d bytes of the tensor intact, want none freed and all intact", spy.putsSeen, len(spy.raw))
		}
		if pool.puts != 1 {
			t.Errorf("after ModelInfer returned, %d buffers went back to the pool, want 1", pool.puts)
		}
	}
}
