package grpcfront

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// service implements GRPCInferenceService on the master's Handler.
type service struct {
	pb.UnimplementedGRPCInferenceServiceServer
	h       Handler
	answers *heldAnswers // charges infer answers until sent (nil: none)
}

var _ pb.GRPCInferenceServiceServer = (*service)(nil)

// get sends GET path and returns the 200 answer's body, or the error.
func (s *service) get(ctx context.Context, path string) (int, []byte, error) {
	x, err := newExchange(ctx, fasthttp.MethodGet, path)
	if err != nil {
		return 0, nil, err
	}
	defer x.release()
	return x.do(ctx, s.h)
}

// ServerLive is true whenever the master answers at all.
func (s *service) ServerLive(ctx context.Context, _ *pb.ServerLiveRequest) (*pb.ServerLiveResponse, error) {
	if _, _, err := s.get(ctx, "/v2/health/live"); err != nil {
		return nil, err
	}
	return &pb.ServerLiveResponse{Live: true}, nil
}

// ServerReady is GET /v2/health/ready: 503 is ready=false, not an error.
func (s *service) ServerReady(ctx context.Context, _ *pb.ServerReadyRequest) (*pb.ServerReadyResponse, error) {
	ready, err := s.ready(ctx, "/v2/health/ready", fasthttp.StatusServiceUnavailable)
	return &pb.ServerReadyResponse{Ready: ready}, err
}

// ModelReady is GET /v2/models/{m}[/versions/{v}]/ready: 503 (not loaded,
// failed, or the server not serving) is ready=false, and so is a model or
// version that is not served (HTTP 400, or a name no model can have), as
// Triton answers: tritonclient.grpc's is_model_ready returns False rather
// than raising.
func (s *service) ModelReady(ctx context.Context, r *pb.ModelReadyRequest) (*pb.ModelReadyResponse, error) {
	path, err := modelPath(r.GetName(), r.GetVersion())
	if err != nil {
		return &pb.ModelReadyResponse{Ready: false}, nil
	}
	ready, err := s.ready(ctx, path+"/ready", fasthttp.StatusBadRequest, fasthttp.StatusServiceUnavailable)
	return &pb.ModelReadyResponse{Ready: ready}, err
}

// ready is whether GET path answers 200; the notReady statuses are
// ready=false rather than an error.
func (s *service) ready(ctx context.Context, path string, notReady ...int) (bool, error) {
	code, _, err := s.get(ctx, path)
	if err != nil && slices.Contains(notReady, code) && ctx.Err() == nil {
		return false, nil
	}
	return err == nil, err
}

// ServerMetadata is GET /v2.
func (s *service) ServerMetadata(ctx context.Context, _ *pb.ServerMetadataRequest) (*pb.ServerMetadataResponse, error) {
	_, body, err := s.get(ctx, "/v2")
	if err != nil {
		return nil, err
	}
	var md pb.ServerMetadataResponse
	var j struct {
		Name       string   `json:"name"`
		Version    string   `json:"version"`
		Extensions []string `json:"extensions"`
	}
	if err := json.Unmarshal(body, &j); err != nil {
		return nil, status.Errorf(codes.Internal, "the server metadata is not JSON: %v", err)
	}
	md.Name, md.Version, md.Extensions = j.Name, j.Version, j.Extensions
	return &md, nil
}

// tensorJSON is a tensor's entry in V2 metadata.
type tensorJSON struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

// ModelMetadata is GET /v2/models/{m}[/versions/{v}].
func (s *service) ModelMetadata(ctx context.Context, r *pb.ModelMetadataRequest) (*pb.ModelMetadataResponse, error) {
	path, err := modelPath(r.GetName(), r.GetVersion())
	if err != nil {
		return nil, err
	}
	_, body, err := s.get(ctx, path)
	if err != nil {
		return nil, err
	}
	var j struct {
		Name     string       `json:"name"`
		Versions []string     `json:"versions"`
		Platform string       `json:"platform"`
		Inputs   []tensorJSON `json:"inputs"`
		Outputs  []tensorJSON `json:"outputs"`
	}
	if err := json.Unmarshal(body, &j); err != nil {
		return nil, status.Errorf(codes.Internal, "the model metadata is not JSON: %v", err)
	}
	return &pb.ModelMetadataResponse{Name: j.Name, Versions: j.Versions, Platform: j.Platform,
		Inputs: tensorMetadata(j.Inputs), Outputs: tensorMetadata(j.Outputs)}, nil
}

func tensorMetadata(ts []tensorJSON) []*pb.ModelMetadataResponse_TensorMetadata {
	out := make([]*pb.ModelMetadataResponse_TensorMetadata, len(ts))
	for i, t := range ts {
		out[i] = &pb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape}
	}
	return out
}

// ModelInfer is POST /v2/models/{m}[/versions/{v}]/infer with the binary
// tensor data extension.
func (s *service) ModelInfer(ctx context.Context, r *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	body, headerLen, free, err := encodePooled(r, bodyPool)
	defer free()
	if err != nil {
		return nil, err
	}
	path, err := modelPath(r.GetModelName(), r.GetModelVersion())
	if err != nil {
		return nil, err
	}
	x, err := newExchange(ctx, fasthttp.MethodPost, path+"/infer")
	if err != nil {
		return nil, err
	}
	defer x.release()
	x.setBody(body, headerLen)
	_, answer, err := x.do(ctx, s.h)
	if err != nil {
		return nil, err
	}
	hlen := x.ctx.Response.Header.Peek(headerLenHeader)
	resp, err := decodeInferResponse(answer, hlen)
	if err != nil {
		return nil, err
	}
	start, _ := strconv.Atoi(string(hlen)) // valid: decoded
	if err := s.answers.hold(ctx, resp, answer, start, x.answerCharge()); err != nil {
		return nil, err
	}
	return resp, nil
}

// cudaSharedMemoryMethod prefixes Triton's CUDA shared memory RPCs
// (CudaSharedMemoryStatus, Register, Unregister), which our proto does
// not carry.
const cudaSharedMemoryMethod = "/inference.GRPCInferenceService/CudaSharedMemory"

// unknownMethod answers the RPCs no service here implements
// UNIMPLEMENTED, as gRPC does, saying why for the CUDA shared memory
// ones.
func unknownMethod(_ any, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	if strings.HasPrefix(method, cudaSharedMemoryMethod) {
		return status.Error(codes.Unimplemented, v2.CUDASharedMemoryUnsupported)
	}
	return status.Errorf(codes.Unimplemented, "unknown method %s", method)
}
