package grpcfront

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// Triton's model repository extension over gRPC: each RPC is the HTTP
// route's JSON body, POSTed to the master, so load and unload take the
// same path (model_control: explicit, surge-first reload, the answer once
// the new state serves or has failed) and the same refusals. Triton
// answers UNAVAILABLE when model control is off; the master's 403 becomes
// PERMISSION_DENIED here (Code), as it is not a state a retry gets past,
// and gRPC clients' retry policies retry UNAVAILABLE on their own.

// RepositoryIndex is POST /v2/repository/index.
func (s *service) RepositoryIndex(ctx context.Context, r *pb.RepositoryIndexRequest) (*pb.RepositoryIndexResponse, error) {
	if err := oneRepository(r.GetRepositoryName()); err != nil {
		return nil, err
	}
	body, err := s.post(ctx, "/v2/repository/index", map[string]bool{"ready": r.GetReady()})
	if err != nil {
		return nil, err
	}
	var index []struct{ Name, Version, State, Reason string }
	if err := json.Unmarshal(body, &index); err != nil {
		return nil, status.Errorf(codes.Internal, "the repository index is not JSON: %v", err)
	}
	resp := &pb.RepositoryIndexResponse{Models: make([]*pb.RepositoryIndexResponse_ModelIndex, len(index))}
	for i, m := range index {
		resp.Models[i] = &pb.RepositoryIndexResponse_ModelIndex{Name: m.Name, Version: m.Version, State: m.State, Reason: m.Reason}
	}
	return resp, nil
}

// RepositoryModelLoad is POST /v2/repository/models/{m}/load, its
// parameters carried as the HTTP body's (config: the override JSON).
func (s *service) RepositoryModelLoad(ctx context.Context, r *pb.RepositoryModelLoadRequest) (*pb.RepositoryModelLoadResponse, error) {
	if err := s.repositoryAction(ctx, r.GetRepositoryName(), r.GetModelName(), "load", r.GetParameters()); err != nil {
		return nil, err
	}
	return &pb.RepositoryModelLoadResponse{}, nil
}

// RepositoryModelUnload is POST /v2/repository/models/{m}/unload.
func (s *service) RepositoryModelUnload(ctx context.Context, r *pb.RepositoryModelUnloadRequest) (*pb.RepositoryModelUnloadResponse, error) {
	if err := s.repositoryAction(ctx, r.GetRepositoryName(), r.GetModelName(), "unload", r.GetParameters()); err != nil {
		return nil, err
	}
	return &pb.RepositoryModelUnloadResponse{}, nil
}

// repositoryAction POSTs {"parameters": ...} to a model's load or unload
// route; the master says which parameters it takes.
func (s *service) repositoryAction(ctx context.Context, repo, model, action string, params map[string]*pb.ModelRepositoryParameter) error {
	if err := oneRepository(repo); err != nil {
		return err
	}
	if _, err := modelPath(model, ""); err != nil || model == "" {
		return status.Errorf(codes.NotFound, "unknown model %q: a model name is one path segment", model)
	}
	body := map[string]map[string]any{"parameters": {}}
	for k, p := range params {
		body["parameters"][k] = parameterValue(p)
	}
	_, err := s.post(ctx, "/v2/repository/models/"+url.PathEscape(model)+"/"+action, body)
	return err
}

// parameterValue is a repository parameter as the HTTP body's JSON value
// (bytes as base64, as encoding/json writes them).
func parameterValue(p *pb.ModelRepositoryParameter) any {
	switch v := p.GetParameterChoice().(type) {
	case *pb.ModelRepositoryParameter_BoolParam:
		return v.BoolParam
	case *pb.ModelRepositoryParameter_Int64Param:
		return v.Int64Param
	case *pb.ModelRepositoryParameter_StringParam:
		return v.StringParam
	case *pb.ModelRepositoryParameter_BytesParam:
		return v.BytesParam
	}
	return nil
}

// oneRepository refuses a repository_name: the config file is the only
// repository, and Triton answers a name it does not support UNSUPPORTED
// (UNIMPLEMENTED) too.
func oneRepository(name string) error {
	if name != "" {
		return status.Errorf(codes.Unimplemented, "repository_name %q: naming a repository is not supported; there is one, the config file (send an empty repository_name)", name)
	}
	return nil
}

// post sends v as a JSON body to path and returns the 200 answer's body,
// or the error.
func (s *service) post(ctx context.Context, path string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "could not encode the request: %v", err)
	}
	x, err := newExchange(ctx, fasthttp.MethodPost, path)
	if err != nil {
		return nil, err
	}
	defer x.release()
	x.ctx.Request.Header.SetContentType("application/json")
	x.ctx.Request.SetBodyRaw(body)
	x.ctx.Request.Header.SetContentLength(len(body))
	_, answer, err := x.do(ctx, s.h)
	return answer, err
}
