package grpcfront

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// ModelStatistics is GET /v2/models/{m}[/versions/{v}]/stats, or
// /v2/models/stats for every model when name is empty. The HTTP answer's
// fields carry Triton's proto field names, so it is read as the proto's
// JSON; what Triton's message lacks (queue_depth, queue_full, dropped) is
// left out.
func (s *service) ModelStatistics(ctx context.Context, r *pb.ModelStatisticsRequest) (*pb.ModelStatisticsResponse, error) {
	path := "/v2/models/stats"
	if r.GetName() != "" || r.GetVersion() != "" {
		p, err := modelPath(r.GetName(), r.GetVersion())
		if err != nil {
			return nil, err
		}
		path = p + "/stats"
	}
	_, body, err := s.get(ctx, path)
	if err != nil {
		return nil, err
	}
	var resp pb.ModelStatisticsResponse
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &resp); err != nil {
		return nil, status.Errorf(codes.Internal, "the statistics answer is not Triton's model_stats: %v", err)
	}
	return &resp, nil
}
