package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// tritonProtos is the copy of Triton's protos kept beside the repository.
var tritonProtos = filepath.Join("..", "..", "..", "shared", "proto", "triton")

// grpcPython is the first of $PYTHON, python3 on PATH and Debian's
// /usr/bin/python3 that imports grpc and grpc_tools ("" when none does):
// Debian's python3-grpcio installs for the system Python only.
func grpcPython() string {
	for _, py := range []string{os.Getenv("PYTHON"), "python3", "/usr/bin/python3"} {
		if py != "" && exec.Command(py, "-c", "import grpc, grpc_tools").Run() == nil {
			return py
		}
	}
	return ""
}

// pythonStubs generates Python client code from Triton's own protos into
// a temp dir with py, skipping when Python's gRPC tools or the protos are
// missing.
func pythonStubs(t *testing.T) (py, dir string) {
	t.Helper()
	if py = grpcPython(); py == "" {
		t.Skip("no python3 imports grpc and grpc_tools: install python3-grpcio and python3-grpc-tools (scripts/setup-test-tools does), or set PYTHON")
	}
	if _, err := os.Stat(filepath.Join(tritonProtos, "grpc_service.proto")); err != nil {
		t.Skipf("Triton's protos are not at %s (../shared/proto/triton beside the repository): %v", tritonProtos, err)
	}
	dir = t.TempDir()
	out, err := exec.Command(py, "-m", "grpc_tools.protoc", "-I", tritonProtos, "--python_out", dir, "--grpc_python_out", dir,
		"grpc_service.proto", "model_config.proto").CombinedOutput()
	if err != nil {
		t.Fatalf("generate the Python client from Triton's protos: %v\n%s", err, out)
	}
	return py, dir
}

// TestGRPCPythonClient: a Python client generated from Triton's
// grpc_service.proto and model_config.proto, not ours, gets from the
// supervisor what the HTTP routes answer: wire compatibility with
// Triton's definition (ModelConfig read as Triton's whole message).
func TestGRPCPythonClient(t *testing.T) {
	py, stubs := pythonStubs(t)
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		extra: "auth:\n  api_keys: [\"" + grpcTestKey + "\"]\n"})
	out, err := exec.Command(py, "testdata/grpc_client.py", stubs, in.grpcAddr, grpcTestKey).CombinedOutput()
	if err != nil {
		t.Fatalf("the Python client failed: %v\n%s", err, out)
	}
	var got struct {
		Live, Ready bool
		ModelReady  bool `json:"model_ready"`
		Server      struct{ Name string }
		Model       struct {
			Name            string
			Inputs, Outputs [][]any
		}
		Raw struct {
			ID      string
			Outputs [][]any
			Y       []float64
		}
		TypedY         []float64 `json:"typed_y"`
		Stream         [][]string
		NoKey          string `json:"no_key"`
		UnknownModel   string `json:"unknown_model"`
		Sequence       string
		NotServedReady []bool `json:"not_served_ready"`
		Config         struct {
			Name, Platform string
			MaxBatchSize   int `json:"max_batch_size"`
			Input          [][]any
			Kinds          []string
		}
		Index [][]string
		Load  string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the Python client printed %s: %v", out, err)
	}
	x := make([]float32, 16)
	for i := range x {
		x[i] = float32(i) / 16
	}
	yb := httpBinaryInfer(t, in, fp32Bytes(x))
	want := make([]float64, 4)
	for i := range want {
		want[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(yb[4*i:])))
	}
	if !got.Live || !got.Ready || !got.ModelReady || got.Server.Name != "supervisor" || got.Model.Name != "mlp" || len(got.Model.Inputs) != 1 ||
		got.Raw.ID != "py-1" || len(got.Raw.Outputs) != 1 || got.Raw.Outputs[0][0] != "y" {
		t.Errorf("the Python client got %s", out)
	}
	if !reflect.DeepEqual(got.Raw.Y, want) || !reflect.DeepEqual(got.TypedY, want) {
		t.Errorf("y: raw %v, typed %v; the HTTP binary path answered %v", got.Raw.Y, got.TypedY, want)
	}
	if !reflect.DeepEqual(got.Stream, [][]string{{"", "py-1"}, {"", "py-1"}}) {
		t.Errorf("stream answers %v", got.Stream)
	}
	if got.NoKey != "UNAUTHENTICATED" || got.UnknownModel != "NOT_FOUND" || got.Load != "PERMISSION_DENIED" || got.Sequence != "INVALID_ARGUMENT" {
		t.Errorf("errors: no key %s, unknown model %s, load with model_control none %s, sequence_id %s",
			got.NoKey, got.UnknownModel, got.Load, got.Sequence)
	}
	if !reflect.DeepEqual(got.NotServedReady, []bool{false, false}) {
		t.Errorf("ModelReady of an unknown model and of version 2: %v, want ready false for both (no error)", got.NotServedReady)
	}
	if c := got.Config; c.Name != "mlp" || c.Platform != "onnxruntime_onnx" || c.MaxBatchSize != 0 ||
		!reflect.DeepEqual(c.Input, [][]any{{"x", "TYPE_FP32", []any{-1.0, 16.0}}}) || !reflect.DeepEqual(c.Kinds, []string{"KIND_CPU"}) {
		t.Errorf("ModelConfig read with Triton's ModelConfig: %+v", c)
	}
	if !reflect.DeepEqual(got.Index, [][]string{{"mlp", "1", "READY"}}) {
		t.Errorf("RepositoryIndex: %v, want mlp 1 READY", got.Index)
	}
}
