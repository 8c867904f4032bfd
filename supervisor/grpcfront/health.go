package grpcfront

import (
	"context"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// health is grpc.health.v1.Health on GET /v2/health/ready, so a gRPC
// load balancer's probe and an HTTP one see the same readiness. Watch and
// List are not served (UNIMPLEMENTED, which clients take as "no health
// checking").
type health struct {
	healthpb.UnimplementedHealthServer
	h Handler
}

// Check answers for the server ("") and for GRPCInferenceService; any
// other service is NOT_FOUND, as the protocol asks.
func (s *health) Check(ctx context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if r.GetService() != "" && r.GetService() != pb.GRPCInferenceService_ServiceDesc.ServiceName {
		return nil, status.Errorf(codes.NotFound, "unknown service %q: this server serves %q", r.GetService(), pb.GRPCInferenceService_ServiceDesc.ServiceName)
	}
	ready, err := (&service{h: s.h}).ready(ctx, "/v2/health/ready")
	if err != nil {
		return nil, err
	}
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ready {
		st = healthpb.HealthCheckResponse_SERVING
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}
