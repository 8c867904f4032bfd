package main

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// grpcFloor answers ModelInfer and ModelStreamInfer from the answers it
// keeps, one per model, asked of the supervisor the first time.
type grpcFloor struct {
	pb.UnimplementedGRPCInferenceServiceServer
	upstream pb.GRPCInferenceServiceClient
	answers  sync.Map // model name -> *pb.ModelInferResponse
}

func newGRPCFloor(upstream string) (*grpcFloor, error) {
	cc, err := grpc.NewClient(upstream, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	return &grpcFloor{upstream: pb.NewGRPCInferenceServiceClient(cc)}, nil
}

func (f *grpcFloor) register(s *grpc.Server) { pb.RegisterGRPCInferenceServiceServer(s, f) }

// answer is the kept answer for req's model, asked for if there is none.
// A shared message is safe to encode from many goroutines: grpc-go only
// reads it.
func (f *grpcFloor) answer(ctx context.Context, req *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	if a, ok := f.answers.Load(req.GetModelName()); ok {
		return a.(*pb.ModelInferResponse), nil
	}
	a, err := f.upstream.ModelInfer(ctx, req)
	if err != nil {
		return nil, err
	}
	kept, _ := f.answers.LoadOrStore(req.GetModelName(), a)
	return kept.(*pb.ModelInferResponse), nil
}

func (f *grpcFloor) ModelInfer(ctx context.Context, req *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	return f.answer(ctx, req)
}

func (f *grpcFloor) ModelStreamInfer(s grpc.BidiStreamingServer[pb.ModelInferRequest, pb.ModelStreamInferResponse]) error {
	for {
		req, err := s.Recv()
		if err != nil {
			return nil // the client closed its side, or went away
		}
		a, err := f.answer(s.Context(), req)
		var out pb.ModelStreamInferResponse
		if err != nil {
			out.ErrorMessage = err.Error()
		} else {
			out.InferResponse = a
		}
		if err := s.Send(&out); err != nil {
			return err
		}
	}
}
