package grpcfront

import (
	"errors"
	"io"

	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// ModelStreamInfer answers each request of the stream with ModelInfer's
// answer, in order, one at a time: a failed request's answer carries its
// error_message (the stream goes on), as Triton's does. Requests are
// matched to answers by order and by the id echoed in infer_response.
// The stream's context (its deadline, its metadata) applies to every
// request of it.
func (s *service) ModelStreamInfer(stream pb.GRPCInferenceService_ModelStreamInferServer) error {
	ctx := stream.Context()
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		answer := &pb.ModelStreamInferResponse{}
		resp, err := s.ModelInfer(ctx, r)
		if err != nil {
			answer.ErrorMessage = status.Convert(err).Message()
			answer.InferResponse = &pb.ModelInferResponse{Id: r.GetId(), ModelName: r.GetModelName(), ModelVersion: r.GetModelVersion()}
		} else {
			answer.InferResponse = resp
		}
		if err := stream.Send(answer); err != nil {
			return err
		}
	}
}
