package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// TestCUDASharedMemoryRefused: Triton's CUDA shared memory extension is
// not served, and says so: its HTTP routes answer 400 and its RPCs
// UNIMPLEMENTED, both with a message naming it (not a bare 404 or
// "unknown method"); other unknown RPCs stay UNIMPLEMENTED.
func TestCUDASharedMemoryRefused(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}})
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v2/cudasharedmemory/status"},
		{http.MethodGet, "/v2/cudasharedmemory/region/r0/status"},
		{http.MethodPost, "/v2/cudasharedmemory/region/r0/register"},
		{http.MethodPost, "/v2/cudasharedmemory/unregister"},
	} {
		code, body, _ := in.do(r.method, r.path, nil, nil)
		if code != http.StatusBadRequest || !strings.Contains(string(body), `"error":"CUDA shared memory is not supported`) {
			t.Errorf("%s %s: %d %s; want 400 saying CUDA shared memory is not supported", r.method, r.path, code, body)
		}
	}
	conn := dialGRPC(t, in)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, m := range []string{"CudaSharedMemoryStatus", "CudaSharedMemoryRegister", "CudaSharedMemoryUnregister"} {
		// The requests' fields do not matter: the RPC is refused before
		// its message is read. Empty messages are wire-compatible.
		err := conn.Invoke(ctx, "/inference.GRPCInferenceService/"+m, &pb.ServerLiveRequest{}, &pb.ServerLiveResponse{})
		if s := status.Convert(err); s.Code() != codes.Unimplemented || !strings.Contains(s.Message(), "CUDA shared memory is not supported") {
			t.Errorf("%s: %v; want UNIMPLEMENTED saying CUDA shared memory is not supported", m, err)
		}
	}
	err := conn.Invoke(ctx, "/inference.GRPCInferenceService/NoSuchRPC", &pb.ServerLiveRequest{}, &pb.ServerLiveResponse{})
	if s := status.Convert(err); s.Code() != codes.Unimplemented || !strings.Contains(s.Message(), "NoSuchRPC") {
		t.Errorf("an unknown RPC: %v; want UNIMPLEMENTED naming it", err)
	}
}
