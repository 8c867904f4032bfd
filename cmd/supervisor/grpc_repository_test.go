package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// grpcModelConfig: ModelConfig answers what GET /v2/models/mlp/config
// does, typed (enums, dims); an unknown model is NOT_FOUND.
func grpcModelConfig(t *testing.T, in *instance, c pb.GRPCInferenceServiceClient, ctx context.Context) {
	r, err := c.ModelConfig(ctx, &pb.ModelConfigRequest{Name: "mlp"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := r.GetConfig()
	if cfg.GetName() != "mlp" || cfg.GetPlatform() != "onnxruntime_onnx" || len(cfg.GetInput()) != 1 ||
		cfg.GetInput()[0].GetDataType() != pb.DataType_TYPE_FP32 || !slices.Equal(cfg.GetInput()[0].GetDims(), []int64{-1, 16}) ||
		len(cfg.GetInstanceGroup()) != 1 || cfg.GetInstanceGroup()[0].GetKind() != pb.ModelInstanceGroup_KIND_CPU {
		t.Errorf("ModelConfig(mlp) = %v; want mlp, onnxruntime_onnx, input TYPE_FP32 [-1,16], one KIND_CPU group", cfg)
	}
	code, body, _ := in.do("GET", "/v2/models/mlp/config", nil, map[string]string{"X-API-Key": grpcTestKey})
	var fromHTTP pb.ModelConfig
	if err := protojson.Unmarshal(body, &fromHTTP); code != 200 || err != nil || !proto.Equal(&fromHTTP, cfg) {
		t.Errorf("GET config = %d %s (%v); ModelConfig = %v", code, body, err, cfg)
	}
	if _, err := c.ModelConfig(ctx, &pb.ModelConfigRequest{Name: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("ModelConfig(nope) = %v, want NOT_FOUND", err)
	}
}

// grpcRepositoryNone: with model_control none the index answers, and load
// and unload are PERMISSION_DENIED (HTTP's 403), naming model_control.
func grpcRepositoryNone(t *testing.T, c pb.GRPCInferenceServiceClient, ctx context.Context) {
	idx, err := c.RepositoryIndex(ctx, &pb.RepositoryIndexRequest{})
	if err != nil || len(idx.GetModels()) != 1 || idx.GetModels()[0].GetName() != "mlp" || idx.GetModels()[0].GetState() != "READY" {
		t.Errorf("RepositoryIndex = %v, %v; want mlp READY", idx, err)
	}
	_, err = c.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: "mlp"})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "model_control") {
		t.Errorf("RepositoryModelLoad with model_control none = %v, want PERMISSION_DENIED naming model_control", err)
	}
	_, err = c.RepositoryModelUnload(ctx, &pb.RepositoryModelUnloadRequest{ModelName: "mlp"})
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("RepositoryModelUnload with model_control none = %v, want PERMISSION_DENIED", err)
	}
	if _, err := c.RepositoryIndex(ctx, &pb.RepositoryIndexRequest{RepositoryName: "other"}); status.Code(err) != codes.Unimplemented {
		t.Errorf("RepositoryIndex(other) = %v, want UNIMPLEMENTED", err)
	}
	if _, err := c.RepositoryIndex(context.Background(), &pb.RepositoryIndexRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("RepositoryIndex without a key = %v, want UNAUTHENTICATED", err)
	}
}

// TestGRPCRepositoryExplicit drives Triton's repository RPCs with
// model_control explicit: they load (with a config override, which the
// ModelConfig RPC then shows), refuse and unload as the HTTP routes do.
func TestGRPCRepositoryExplicit(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp", "fixed"},
		extra: "model_control: explicit\nstartup_models: [mlp]\n"})
	c := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	ctx := withKey(t, "x-api-key", "unused")
	wantIndex := func(name, state, reason string) {
		t.Helper()
		idx, err := c.RepositoryIndex(ctx, &pb.RepositoryIndexRequest{})
		for _, m := range idx.GetModels() {
			if m.GetName() == name && m.GetState() == state && strings.Contains(m.GetReason(), reason) {
				return
			}
		}
		t.Errorf("RepositoryIndex = %v, %v; want %s %s (%q)", idx, err, name, state, reason)
	}
	wantIndex("fixed", "UNAVAILABLE", "startup_models")
	if _, err := c.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: "fixed"}); err != nil {
		t.Fatalf("load fixed: %v", err)
	}
	if r, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: "fixed"}); err != nil || !r.GetReady() {
		t.Errorf("ModelReady(fixed) after its load = %v, %v", r, err)
	}
	override := map[string]*pb.ModelRepositoryParameter{"config": {ParameterChoice: &pb.ModelRepositoryParameter_StringParam{
		StringParam: `{"max_batch_size":8,"dynamic_batching":{"max_queue_delay_microseconds":2000}}`}}}
	if _, err := c.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: "mlp", Parameters: override}); err != nil {
		t.Fatalf("load mlp with an override: %v", err)
	}
	cfg, err := c.ModelConfig(ctx, &pb.ModelConfigRequest{Name: "mlp"})
	if err != nil || cfg.GetConfig().GetMaxBatchSize() != 8 || cfg.GetConfig().GetDynamicBatching().GetMaxQueueDelayMicroseconds() != 2000 ||
		!slices.Equal(cfg.GetConfig().GetInput()[0].GetDims(), []int64{16}) {
		t.Errorf("ModelConfig(mlp) after the override = %v, %v; want max_batch_size 8, 2000us, dims [16]", cfg, err)
	}
	for name, req := range map[string]*pb.RepositoryModelLoadRequest{
		"unknown parameter":   {ModelName: "mlp", Parameters: map[string]*pb.ModelRepositoryParameter{"file:1/model.onnx": {ParameterChoice: &pb.ModelRepositoryParameter_BytesParam{BytesParam: []byte("x")}}}},
		"config not a string": {ModelName: "mlp", Parameters: map[string]*pb.ModelRepositoryParameter{"config": {ParameterChoice: &pb.ModelRepositoryParameter_BoolParam{BoolParam: true}}}},
	} {
		if _, err := c.RepositoryModelLoad(ctx, req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("load with %s = %v, want INVALID_ARGUMENT", name, err)
		}
	}
	if _, err := c.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: "nosuch"}); status.Code(err) != codes.NotFound {
		t.Errorf("load of a model not in the file = %v, want NOT_FOUND", err)
	}
	unload := map[string]*pb.ModelRepositoryParameter{"unload_dependents": {ParameterChoice: &pb.ModelRepositoryParameter_BoolParam{BoolParam: false}}}
	if _, err := c.RepositoryModelUnload(ctx, &pb.RepositoryModelUnloadRequest{ModelName: "fixed", Parameters: unload}); err != nil {
		t.Fatalf("unload fixed: %v", err)
	}
	// Triton answers ready: false for a model it does not serve, so that
	// tritonclient's is_model_ready returns False instead of raising.
	if r, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: "fixed"}); err != nil || r.GetReady() {
		t.Errorf("ModelReady(fixed) after its unload = %v, %v; want ready false", r, err)
	}
	wantIndex("fixed", "UNAVAILABLE", "unloaded")
	if _, err := c.RepositoryModelUnload(ctx, &pb.RepositoryModelUnloadRequest{ModelName: "mlp"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("unload of the last model = %v, want INVALID_ARGUMENT", err)
	}
}
