package grpcfront

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// Triton's system shared memory extension over gRPC: each RPC is the
// master's HTTP route under /v2/systemsharedmemory (supervisor/sysshm),
// so a region registered over one front is the same region over the
// other, for the same API key.

const shmPrefix = "/v2/systemsharedmemory"

// shmRegionPath is the path of region name's route op; "" name: the
// routes for every region.
func shmRegionPath(name, op string) (string, error) {
	if name == "" {
		return shmPrefix + "/" + op, nil
	}
	if strings.Contains(name, "/") || name == "." || name == ".." {
		return "", status.Errorf(codes.InvalidArgument, "shared memory region name %q: a name has no '/'", name)
	}
	return shmPrefix + "/region/" + url.PathEscape(name) + "/" + op, nil
}

// SystemSharedMemoryStatus is GET /v2/systemsharedmemory[/region/{name}]/status.
func (s *service) SystemSharedMemoryStatus(ctx context.Context, r *pb.SystemSharedMemoryStatusRequest) (*pb.SystemSharedMemoryStatusResponse, error) {
	path, err := shmRegionPath(r.GetName(), "status")
	if err != nil {
		return nil, err
	}
	_, body, err := s.get(ctx, path)
	if err != nil {
		return nil, err
	}
	var list []struct {
		Name     string `json:"name"`
		Key      string `json:"key"`
		Offset   uint64 `json:"offset"`
		ByteSize uint64 `json:"byte_size"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, status.Errorf(codes.Internal, "the shared memory status is not JSON: %v", err)
	}
	resp := &pb.SystemSharedMemoryStatusResponse{Regions: make(map[string]*pb.SystemSharedMemoryStatusResponse_RegionStatus, len(list))}
	for _, g := range list {
		resp.Regions[g.Name] = &pb.SystemSharedMemoryStatusResponse_RegionStatus{Name: g.Name, Key: g.Key, Offset: g.Offset, ByteSize: g.ByteSize}
	}
	return resp, nil
}

// SystemSharedMemoryRegister is POST /v2/systemsharedmemory/region/{name}/register.
func (s *service) SystemSharedMemoryRegister(ctx context.Context, r *pb.SystemSharedMemoryRegisterRequest) (*pb.SystemSharedMemoryRegisterResponse, error) {
	if r.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "a shared memory region needs a name")
	}
	path, err := shmRegionPath(r.GetName(), "register")
	if err != nil {
		return nil, err
	}
	body := map[string]any{"key": r.GetKey(), "offset": r.GetOffset(), "byte_size": r.GetByteSize()}
	if _, err := s.post(ctx, path, body); err != nil {
		return nil, err
	}
	return &pb.SystemSharedMemoryRegisterResponse{}, nil
}

// SystemSharedMemoryUnregister is POST /v2/systemsharedmemory[/region/{name}]/unregister.
func (s *service) SystemSharedMemoryUnregister(ctx context.Context, r *pb.SystemSharedMemoryUnregisterRequest) (*pb.SystemSharedMemoryUnregisterResponse, error) {
	path, err := shmRegionPath(r.GetName(), "unregister")
	if err != nil {
		return nil, err
	}
	if _, err := s.post(ctx, path, nil); err != nil {
		return nil, err
	}
	return &pb.SystemSharedMemoryUnregisterResponse{}, nil
}
