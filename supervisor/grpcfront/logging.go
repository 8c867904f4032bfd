package grpcfront

import (
	"context"
	"encoding/json"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/supervisor/logsettings"
)

// LogSettings is Triton's logging extension over gRPC: GET /v2/logging
// when the request names no settings, POST /v2/logging with them as its
// JSON body otherwise, so both take the same admission (the API key:
// UNAUTHENTICATED without one) and the same refusals (INVALID_ARGUMENT,
// with the HTTP route's reason). The answer is every setting.
func (s *service) LogSettings(ctx context.Context, r *pb.LogSettingsRequest) (*pb.LogSettingsResponse, error) {
	var body []byte
	var err error
	if len(r.GetSettings()) == 0 {
		_, body, err = s.get(ctx, "/v2/logging")
	} else {
		set := make(map[string]any, len(r.GetSettings()))
		for k, v := range r.GetSettings() {
			switch p := v.GetParameterChoice().(type) {
			case *pb.LogSettingsRequest_SettingValue_BoolParam:
				set[k] = p.BoolParam
			case *pb.LogSettingsRequest_SettingValue_Uint32Param:
				set[k] = p.Uint32Param
			case *pb.LogSettingsRequest_SettingValue_StringParam:
				set[k] = p.StringParam
			default:
				return nil, status.Errorf(codes.InvalidArgument, "logging setting %q has no value (set bool_param, uint32_param or string_param)", k)
			}
		}
		body, err = s.post(ctx, "/v2/logging", set)
	}
	if err != nil {
		return nil, err
	}
	var j logsettings.Settings
	if err := json.Unmarshal(body, &j); err != nil {
		return nil, status.Errorf(codes.Internal, "the logging settings are not JSON: %v", err)
	}
	type value = pb.LogSettingsResponse_SettingValue
	boolean := func(b bool) *value {
		return &value{ParameterChoice: &pb.LogSettingsResponse_SettingValue_BoolParam{BoolParam: b}}
	}
	str := func(s string) *value {
		return &value{ParameterChoice: &pb.LogSettingsResponse_SettingValue_StringParam{StringParam: s}}
	}
	return &pb.LogSettingsResponse{Settings: map[string]*value{
		logsettings.KeyFile:    str(j.File),
		logsettings.KeyInfo:    boolean(j.Info),
		logsettings.KeyWarning: boolean(j.Warning),
		logsettings.KeyError:   boolean(j.Error),
		logsettings.KeyVerbose: {ParameterChoice: &pb.LogSettingsResponse_SettingValue_Uint32Param{Uint32Param: j.VerboseLevel}},
		logsettings.KeyFormat:  str(j.Format),
	}}, nil
}
