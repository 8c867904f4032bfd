package grpcfront

import (
	"google.golang.org/grpc/mem"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// answerCodec is the server's codec: decodeCap's, except that an infer
// answer charged to the body budget (heldAnswers) is encoded around its
// body's bytes, which stay charged until gRPC frees them (see
// answerhold.go).
type answerCodec struct {
	decodeCap
	answers *heldAnswers
}

// Marshal encodes a charged ModelInferResponse, alone or as a
// ModelStreamInferResponse's, without copying its outputs; every other
// message as gRPC's proto codec does.
func (c answerCodec) Marshal(v any) (mem.BufferSlice, error) {
	var outer *pb.ModelStreamInferResponse
	resp, ok := v.(*pb.ModelInferResponse)
	if !ok {
		if outer, ok = v.(*pb.ModelStreamInferResponse); ok {
			resp = outer.GetInferResponse()
		}
	}
	h := c.answers.take(resp)
	if h == nil {
		return c.decodeCap.Marshal(v)
	}
	return h.encode(resp, outer)
}
