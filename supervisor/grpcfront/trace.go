package grpcfront

import (
	"context"
	"encoding/json"
	"net/url"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// TraceSetting is Triton's trace extension over gRPC: GET
// /v2/trace/setting (or /v2/models/{model_name}/trace/setting) when the
// request names no settings, POST with them as its JSON body otherwise,
// so both take the HTTP routes' admission (the API key: UNAUTHENTICATED
// without one) and refusals (INVALID_ARGUMENT with the HTTP route's
// reason; NOT_FOUND while tracing is off). A setting with no values
// clears the model's own, as Triton's does. The answer is every setting
// in force for the scope.
func (s *service) TraceSetting(ctx context.Context, r *pb.TraceSettingRequest) (*pb.TraceSettingResponse, error) {
	path := "/v2/trace/setting"
	if m := r.GetModelName(); m != "" {
		path = "/v2/models/" + url.PathEscape(m) + "/trace/setting"
	}
	var body []byte
	var err error
	if len(r.GetSettings()) == 0 {
		_, body, err = s.get(ctx, path)
	} else {
		set := make(map[string]any, len(r.GetSettings()))
		for k, v := range r.GetSettings() {
			switch vals := v.GetValue(); len(vals) {
			case 0:
				set[k] = nil // clear the model's own value
			default:
				set[k] = vals
			}
		}
		body, err = s.post(ctx, path, set)
	}
	if err != nil {
		return nil, err
	}
	var j map[string]any
	if err := json.Unmarshal(body, &j); err != nil {
		return nil, status.Errorf(codes.Internal, "the trace settings are not JSON: %v", err)
	}
	out := &pb.TraceSettingResponse{Settings: make(map[string]*pb.TraceSettingResponse_SettingValue, len(j))}
	for k, v := range j {
		var vals []string
		switch v := v.(type) {
		case string:
			vals = []string{v}
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok {
					vals = append(vals, s)
				}
			}
		}
		out.Settings[k] = &pb.TraceSettingResponse_SettingValue{Value: vals}
	}
	return out, nil
}
