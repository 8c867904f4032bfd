package main

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// bodilessPost is a POST with no body and no Content-Length (nor
// Transfer-Encoding), as tritonclient.http sends the repository calls;
// its answer is read until the server closes.
func bodilessPost(t *testing.T, in *instance, path string) string {
	t.Helper()
	return rawExchange(t, in, "POST "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
}

// TestTritonClientRequests sends a real server what Triton's clients send
// where it used to answer otherwise than Triton:
//   - repository calls with no body and no Content-Length are served as
//     with an empty body (they got 411);
//   - readiness of an unknown model or version is HTTP 400 and gRPC
//     ready: false (it was 404 and NOT_FOUND, so tritonclient.grpc's
//     is_model_ready raised instead of returning False);
//   - Triton's sequence parameters are refused, 400 and INVALID_ARGUMENT
//     naming the missing sequence batcher (they were ignored: 200), and
//     neither /v2 nor ServerMetadata lists the sequence extension.
func TestTritonClientRequests(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp", "fixed"},
		extra: "model_control: explicit\nstartup_models: [mlp]\n"})
	c := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("bodiless repository calls", func(t *testing.T) {
		resp := bodilessPost(t, in, "/v2/repository/index")
		if !strings.HasPrefix(resp, "HTTP/1.1 200") || !strings.Contains(resp, `{"name":"mlp","version":"1","state":"READY"}`) {
			t.Errorf("index without a body or Content-Length: %q, want 200 listing mlp READY", resp)
		}
		if resp := bodilessPost(t, in, "/v2/repository/models/fixed/load"); !strings.HasPrefix(resp, "HTTP/1.1 200") {
			t.Errorf("load without a body or Content-Length: %q, want 200", resp)
		}
		if code, body, _ := in.get("/v2/models/fixed/ready"); code != http.StatusOK {
			t.Errorf("fixed after its bodiless load: ready = %d %s, want 200", code, body)
		}
		if resp := bodilessPost(t, in, "/v2/repository/models/fixed/unload"); !strings.HasPrefix(resp, "HTTP/1.1 200") {
			t.Errorf("unload without a body or Content-Length: %q, want 200", resp)
		}
		resp = rawExchange(t, in, "POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
		if !strings.HasPrefix(resp, "HTTP/1.1 411") {
			t.Errorf("a chunked index body: %q, want 411 still", resp)
		}
	})

	t.Run("readiness of what is not served", func(t *testing.T) {
		for path, want := range map[string]int{
			"/v2/models/mlp/ready":              http.StatusOK,
			"/v2/models/mlp/versions/1/ready":   http.StatusOK,
			"/v2/models/mlp/versions/2/ready":   http.StatusBadRequest,
			"/v2/models/nope/ready":             http.StatusBadRequest,
			"/v2/models/nope/versions/1/ready":  http.StatusBadRequest,
			"/v2/models/fixed/ready":            http.StatusBadRequest, // unloaded
			"/v2/models/mlp/versions/2":         http.StatusNotFound,   // not a readiness route: 404 as before
			"/v2/models/nope":                   http.StatusNotFound,
			"/v2/models/nope/versions/1/config": http.StatusNotFound,
		} {
			if code, body, _ := in.get(path); code != want {
				t.Errorf("GET %s = %d %s, want %d", path, code, body, want)
			}
		}
		for _, r := range []struct {
			name, version string
			ready         bool
		}{{"mlp", "", true}, {"mlp", "1", true}, {"mlp", "2", false}, {"nope", "", false}, {"fixed", "", false}, {"a/../mlp", "", false}} {
			got, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: r.name, Version: r.version})
			if err != nil || got.Ready != r.ready {
				t.Errorf("ModelReady(%q, version %q) = %v, %v; want ready %v and no error", r.name, r.version, got, err, r.ready)
			}
		}
	})

	t.Run("sequence parameters", func(t *testing.T) {
		x := `{"name":"x","datatype":"FP32","shape":[1,16],"data":[` + strings.Repeat("0.5,", 15) + `0.5]}`
		for _, params := range []string{`{"sequence_id":7,"sequence_start":true}`, `{"sequence_id":"s-1"}`, `{"sequence_end":true}`} {
			code, body, _ := in.post("/v2/models/mlp/infer", []byte(`{"parameters":`+params+`,"inputs":[`+x+`]}`), nil)
			if code != http.StatusBadRequest || !strings.Contains(string(body), "no sequence batcher") {
				t.Errorf("infer with parameters %s = %d %s, want 400 saying there is no sequence batcher", params, code, body)
			}
		}
		header := `{"parameters":{"sequence_id":7},"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"parameters":{"binary_data_size":64}}]}`
		code, body, _ := in.post("/v2/models/mlp/infer", append([]byte(header), fp32Bytes(seq(16, 1))...),
			map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header))})
		if code != http.StatusBadRequest || !strings.Contains(string(body), "parameters.sequence_id") {
			t.Errorf("binary infer with sequence_id = %d %s, want 400 naming parameters.sequence_id", code, body)
		}
		req := mlpRequest("seq", seq(16, 1))
		req.Parameters = map[string]*pb.InferParameter{
			"sequence_id":    {ParameterChoice: &pb.InferParameter_Uint64Param{Uint64Param: 7}},
			"sequence_start": {ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: true}},
		}
		if _, err := c.ModelInfer(ctx, req); status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "no sequence batcher") {
			t.Errorf("gRPC ModelInfer with sequence_id = %v, want INVALID_ARGUMENT saying there is no sequence batcher", err)
		}
		if _, err := c.ModelInfer(ctx, mlpRequest("plain", seq(16, 1))); err != nil {
			t.Errorf("gRPC ModelInfer without sequence parameters: %v", err)
		}
		md, err := c.ServerMetadata(ctx, &pb.ServerMetadataRequest{})
		if err != nil || slices.Contains(md.GetExtensions(), "sequence") || !slices.Contains(md.GetExtensions(), "model_repository") {
			t.Errorf("ServerMetadata extensions %v (%v), want model_repository and no sequence", md.GetExtensions(), err)
		}
	})
}
