package grpcfront

import (
	"context"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// heldRequest is a unary ModelInfer's request together with the pooled
// buffer its raw_input_contents point into (decodeCap decodes into it,
// unmarshalInferRequest aliases the entries). modelInferHandler frees
// the buffer once ModelInfer has returned: the request's tensors are
// read only while it runs (encodeInferRequest copies them into the
// body sent on), and nothing of the request outlives it. Reusing the
// pool's buffers, not a fresh 600 KB per RPC for the default model,
// spares the master the page faults and clearing of a new allocation
// (issue 33). ModelStreamInfer's requests are decoded into fresh,
// collected memory instead: its handler owns no per-message end.
// decodecost.Of charges the message's length; the pool's rounding up of a
// buffer (to its tier's size) is the pool's, held whether or not a
// request uses it.
type heldRequest struct {
	req *pb.ModelInferRequest
	buf mem.Buffer // nil until decoded
}

// free hands the buffer back to its pool; h.req must be dead.
func (h *heldRequest) free() {
	if h.buf != nil {
		h.buf.Free()
		h.buf = nil
	}
}

// modelInferHandler is the generated ModelInfer handler, but decoding
// into a heldRequest and freeing its buffer when ModelInfer returns.
// The interceptors (unaryWatch) call ModelInfer synchronously.
func modelInferHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	h := &heldRequest{}
	if err := dec(h); err != nil {
		return nil, err
	}
	defer h.free()
	if interceptor == nil {
		return srv.(pb.GRPCInferenceServiceServer).ModelInfer(ctx, h.req)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: pb.GRPCInferenceService_ModelInfer_FullMethodName}
	return interceptor(ctx, h.req, info, func(ctx context.Context, req any) (any, error) {
		return srv.(pb.GRPCInferenceServiceServer).ModelInfer(ctx, req.(*pb.ModelInferRequest))
	})
}

// serviceDesc is the generated service description with ModelInfer's
// handler replaced by modelInferHandler.
func serviceDesc() *grpc.ServiceDesc {
	d := pb.GRPCInferenceService_ServiceDesc
	d.Methods = slices.Clone(d.Methods)
	for i := range d.Methods {
		if d.Methods[i].MethodName == "ModelInfer" {
			d.Methods[i].Handler = modelInferHandler
		}
	}
	return &d
}
