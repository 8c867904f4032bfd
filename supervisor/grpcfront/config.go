package grpcfront

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// ModelConfig is GET /v2/models/{m}[/versions/{v}]/config. The HTTP
// answer is Triton's JSON model configuration, which is ModelConfig's
// protojson form (proto field names, enums by name), so it is read as
// such; fields our model_config.proto leaves out would be dropped, but
// the HTTP answer fills none.
func (s *service) ModelConfig(ctx context.Context, r *pb.ModelConfigRequest) (*pb.ModelConfigResponse, error) {
	path, err := modelPath(r.GetName(), r.GetVersion())
	if err != nil {
		return nil, err
	}
	_, body, err := s.get(ctx, path+"/config")
	if err != nil {
		return nil, err
	}
	var cfg pb.ModelConfig
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &cfg); err != nil {
		return nil, status.Errorf(codes.Internal, "the model configuration is not Triton's ModelConfig JSON: %v", err)
	}
	return &pb.ModelConfigResponse{Config: &cfg}, nil
}
