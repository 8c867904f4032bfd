package grpcfront

import (
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

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
// ModelStreamInferResponse's, without copying its outputs; an answer
// with a write bound (boundAnswer) into a buffer whose release stops it;
// every other message as gRPC's proto codec does.
func (c answerCodec) Marshal(v any) (mem.BufferSlice, error) {
	v, bound := unbound(v)
	var outer *pb.ModelStreamInferResponse
	resp, ok := v.(*pb.ModelInferResponse)
	if !ok {
		if outer, ok = v.(*pb.ModelStreamInferResponse); ok {
			resp = outer.GetInferResponse()
		}
	}
	if h := c.answers.take(resp); h != nil {
		return h.encode(resp, outer) // bound by its charge
	}
	if m, ok := v.(proto.Message); ok && bound != nil {
		return bound.marshal(m)
	}
	return c.decodeCap.Marshal(v)
}
