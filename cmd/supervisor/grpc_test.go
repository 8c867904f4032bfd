package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

const grpcTestKey = "grpc-test-key-0123456789abcdef"

// dialGRPC connects a client generated from our proto to in's gRPC
// listener.
func dialGRPC(t *testing.T, in *instance) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(in.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// withKey is a context carrying the API key as Triton clients send it.
func withKey(t *testing.T, header, value string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, header, value)
}

func fp32Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// httpBinaryInfer sends x to the MLP over HTTP with the binary extension
// and returns y's bytes.
func httpBinaryInfer(t *testing.T, in *instance, x []byte) []byte {
	t.Helper()
	header := []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"parameters":{"binary_data_size":` +
		strconv.Itoa(len(x)) + `}}],"parameters":{"binary_data_output":true}}`)
	code, body, hdr := in.post("/v2/models/mlp/infer", append(header, x...), map[string]string{
		"Inference-Header-Content-Length": strconv.Itoa(len(header)), "X-API-Key": grpcTestKey})
	if code != http.StatusOK {
		t.Fatalf("HTTP binary infer: %d %s", code, body)
	}
	n, _ := strconv.Atoi(hdr.Get("Inference-Header-Content-Length"))
	return body[n:]
}

// TestGRPC serves every implemented RPC to a Go client generated from our
// proto, against a real supervisor: answers equal to the HTTP routes',
// ModelInfer's output bit-identical to the HTTP binary path's, each mapped
// error code, auth through both metadata keys, health and reflection.
func TestGRPC(t *testing.T) {
	// max_in_flight 1: the subtests send one request at a time, and
	// "busy" fills the one place with an HTTP request.
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		extra: "auth:\n  api_keys: [\"" + grpcTestKey + "\"]\nlimits:\n  max_in_flight: 1\n"})
	conn := dialGRPC(t, in)
	c := pb.NewGRPCInferenceServiceClient(conn)
	ctx := withKey(t, "authorization", "Bearer "+grpcTestKey)

	t.Run("health and metadata", func(t *testing.T) { grpcMetadataRPCs(t, in, c, ctx) })
	t.Run("infer", func(t *testing.T) { grpcInfer(t, in, c, ctx) })
	t.Run("stream", func(t *testing.T) { grpcStream(t, c, ctx) })
	t.Run("statistics", func(t *testing.T) { grpcStatistics(t, in, c, ctx) })
	t.Run("model config", func(t *testing.T) { grpcModelConfig(t, in, c, ctx) })
	t.Run("repository, model_control none", func(t *testing.T) { grpcRepositoryNone(t, c, ctx) })
	t.Run("errors", func(t *testing.T) { grpcErrors(t, c, ctx) })
	t.Run("grpc.health.v1 and reflection", func(t *testing.T) { grpcHealthReflection(t, conn) })
	t.Run("busy", func(t *testing.T) { grpcBusy(t, in, c, ctx) })
}

// grpcBusy: while an HTTP request whose body never comes holds the one
// max_in_flight place, ModelInfer is RESOURCE_EXHAUSTED (HTTP's 503 with
// Retry-After); once it leaves, ModelInfer succeeds again. A ModelInfer in
// flight when the HTTP header arrives gets the place instead, and the HTTP
// request is refused: then the holder is sent again.
func grpcBusy(t *testing.T, in *instance, c pb.GRPCInferenceServiceClient, ctx context.Context) {
	var holder net.Conn
	hold := func() {
		if holder != nil {
			holder.Close()
		}
		holder = in.dial(t)
		if _, err := fmt.Fprintf(holder, "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\nContent-Length: 100\r\n\r\n", grpcTestKey); err != nil {
			t.Fatal(err)
		}
	}
	hold()
	var last error
	pollUntil(t, 30*time.Second, "ModelInfer is RESOURCE_EXHAUSTED while the place is held", func() bool {
		// The holder is answered only when it was refused.
		_ = holder.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if n, err := holder.Read(make([]byte, 1)); n > 0 || !isTimeout(err) {
			hold()
			return false
		}
		_, last = c.ModelInfer(ctx, mlpRequest("busy", seq(16, 1)))
		return status.Code(last) == codes.ResourceExhausted
	})
	if !strings.Contains(status.Convert(last).Message(), "max_in_flight") {
		t.Errorf("the refusal does not say why: %v", last)
	}
	holder.Close()
	pollUntil(t, 30*time.Second, "ModelInfer succeeds once the place is free", func() bool {
		_, last = c.ModelInfer(ctx, mlpRequest("free", seq(16, 1)))
		return last == nil
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func grpcMetadataRPCs(t *testing.T, in *instance, c pb.GRPCInferenceServiceClient, ctx context.Context) {
	if r, err := c.ServerLive(ctx, &pb.ServerLiveRequest{}); err != nil || !r.Live {
		t.Errorf("ServerLive = %v, %v", r, err)
	}
	if r, err := c.ServerReady(ctx, &pb.ServerReadyRequest{}); err != nil || !r.Ready {
		t.Errorf("ServerReady = %v, %v", r, err)
	}
	if r, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: "mlp"}); err != nil || !r.Ready {
		t.Errorf("ModelReady(mlp) = %v, %v", r, err)
	}
	sm, err := c.ServerMetadata(ctx, &pb.ServerMetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var httpSM pb.ServerMetadataResponse
	getJSON(t, in, "/v2", &httpSM)
	if sm.Name != httpSM.Name || sm.Version != httpSM.Version || len(sm.Extensions) == 0 || sm.Extensions[0] != httpSM.Extensions[0] {
		t.Errorf("ServerMetadata = %v, GET /v2 = %v", sm, &httpSM)
	}
	mm, err := c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "mlp"})
	if err != nil {
		t.Fatal(err)
	}
	var httpMM struct {
		Name, Platform  string
		Versions        []string
		Inputs, Outputs []struct {
			Name, Datatype string
			Shape          []int64
		}
	}
	getJSON(t, in, "/v2/models/mlp", &httpMM)
	got, _ := json.Marshal([]any{mm.Name, mm.Platform, mm.Versions, mm.Inputs[0].Name, mm.Inputs[0].Datatype, mm.Inputs[0].Shape, mm.Outputs[0].Name, mm.Outputs[0].Shape})
	want, _ := json.Marshal([]any{httpMM.Name, httpMM.Platform, httpMM.Versions, httpMM.Inputs[0].Name, httpMM.Inputs[0].Datatype, httpMM.Inputs[0].Shape, httpMM.Outputs[0].Name, httpMM.Outputs[0].Shape})
	if !bytes.Equal(got, want) || mm.Inputs[0].Shape[1] != 16 {
		t.Errorf("ModelMetadata = %s, GET /v2/models/mlp = %s", got, want)
	}
}

func getJSON(t *testing.T, in *instance, path string, v any) {
	t.Helper()
	code, body, _ := in.do(http.MethodGet, path, nil, map[string]string{"X-API-Key": grpcTestKey})
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func mlpRequest(id string, x []float32) *pb.ModelInferRequest {
	return &pb.ModelInferRequest{ModelName: "mlp", Id: id,
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1, 16}}},
		RawInputContents: [][]byte{fp32Bytes(x)}}
}

func grpcInfer(t *testing.T, in *instance, c pb.GRPCInferenceServiceClient, ctx context.Context) {
	x := seq(16, 1)
	want := httpBinaryInfer(t, in, fp32Bytes(x))
	if len(want) != 16 || bytes.Equal(want, make([]byte, 16)) {
		t.Fatalf("the HTTP answer is not 4 non-zero FP32 values: %x", want)
	}
	var hdr metadata.MD
	raw, err := c.ModelInfer(metadata.AppendToOutgoingContext(ctx, "x-request-id", "trace-7"), mlpRequest("raw-1", x), grpc.Header(&hdr))
	if err != nil {
		t.Fatal(err)
	}
	if got := hdr.Get("x-request-id"); len(got) != 1 || got[0] != "trace-7" {
		t.Errorf("x-request-id answered %v, want the client's trace-7", got)
	}
	if raw.ModelName != "mlp" || raw.Id != "raw-1" || len(raw.Outputs) != 1 || raw.Outputs[0].Name != "y" ||
		raw.Outputs[0].Datatype != "FP32" || len(raw.Outputs[0].Shape) != 2 || raw.Outputs[0].Shape[1] != 4 {
		t.Errorf("ModelInfer answered %v", raw)
	}
	if len(raw.RawOutputContents) != 1 || !bytes.Equal(raw.RawOutputContents[0], want) {
		t.Errorf("raw_output_contents %x, the HTTP binary path answered %x", raw.RawOutputContents, want)
	}
	typed := &pb.ModelInferRequest{ModelName: "mlp", Outputs: []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "y"}},
		Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1, 16},
			Contents: &pb.InferTensorContents{Fp32Contents: x}}}}
	r, err := c.ModelInfer(ctx, typed)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.RawOutputContents) != 1 || !bytes.Equal(r.RawOutputContents[0], want) {
		t.Errorf("typed contents: raw_output_contents %x, want %x", r.RawOutputContents, want)
	}
}

func grpcStream(t *testing.T, c pb.GRPCInferenceServiceClient, ctx context.Context) {
	s, err := c.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bad := mlpRequest("s-bad", seq(16, 1))
	bad.Inputs[0].Shape = []int64{1, 15}
	reqs := []*pb.ModelInferRequest{mlpRequest("s-1", seq(16, 1)), bad, mlpRequest("s-3", seq(16, 2))}
	for _, r := range reqs {
		if err := s.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		a, err := s.Recv()
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		failed := a.ErrorMessage != ""
		if a.InferResponse.GetId() != r.Id || failed != (r == bad) || (!failed && len(a.InferResponse.RawOutputContents) != 1) {
			t.Errorf("answer %d to %q: id %q, error %q, %d outputs", i, r.Id, a.InferResponse.GetId(), a.ErrorMessage, len(a.InferResponse.GetRawOutputContents()))
		}
	}
}

func grpcErrors(t *testing.T, c pb.GRPCInferenceServiceClient, ctx context.Context) {
	wrongShape := mlpRequest("e", seq(16, 1))
	wrongShape.Inputs[0].Shape = []int64{1, 15}
	short, cancel := context.WithTimeout(withKey(t, "x-api-key", grpcTestKey), time.Microsecond)
	defer cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		req  *pb.ModelInferRequest
		want codes.Code
	}{
		{"wrong shape", ctx, wrongShape, codes.InvalidArgument},
		{"two raw contents for one input", ctx, &pb.ModelInferRequest{ModelName: "mlp", Inputs: wrongShape.Inputs, RawInputContents: [][]byte{{1}, {2}}}, codes.InvalidArgument},
		{"FP16 in typed contents", ctx, &pb.ModelInferRequest{ModelName: "mlp", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP16", Shape: []int64{1}, Contents: &pb.InferTensorContents{}}}}, codes.InvalidArgument},
		{"unknown model", ctx, &pb.ModelInferRequest{ModelName: "nope", Inputs: wrongShape.Inputs}, codes.NotFound},
		{"a name that cleans to another", ctx, &pb.ModelInferRequest{ModelName: "nope/../mlp", Inputs: wrongShape.Inputs}, codes.NotFound},
		{"sequence parameters", ctx, &pb.ModelInferRequest{ModelName: "mlp", Inputs: wrongShape.Inputs, RawInputContents: [][]byte{fp32Bytes(seq(16, 1))},
			Parameters: map[string]*pb.InferParameter{"sequence_end": {ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: true}}}}, codes.InvalidArgument},
		{"no key", context.Background(), mlpRequest("e", seq(16, 1)), codes.Unauthenticated},
		{"no key, 7 MiB (refused before it is read)", context.Background(), &pb.ModelInferRequest{ModelName: "mlp", Inputs: wrongShape.Inputs, RawInputContents: [][]byte{make([]byte, 7<<20)}}, codes.Unauthenticated},
		{"wrong key", withKey(t, "x-api-key", "not-the-key-0123456789abcdef"), mlpRequest("e", seq(16, 1)), codes.Unauthenticated},
		{"message over max_body_bytes", ctx, &pb.ModelInferRequest{ModelName: "mlp", Inputs: wrongShape.Inputs, RawInputContents: [][]byte{make([]byte, 9<<20)}}, codes.ResourceExhausted},
		{"deadline", short, mlpRequest("e", seq(16, 1)), codes.DeadlineExceeded},
	} {
		_, err := c.ModelInfer(tc.ctx, tc.req)
		if status.Code(err) != tc.want || (tc.want != codes.DeadlineExceeded && status.Convert(err).Message() == "") {
			t.Errorf("%s: %v, want %s with a message", tc.name, err, tc.want)
		}
	}
	// Not served is not ready, as Triton answers it (not NOT_FOUND).
	if r, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: "nope"}); err != nil || r.Ready {
		t.Errorf("ModelReady(nope) = %v, %v; want ready false", r, err)
	}
	// Version 1 is the only one served; another is not ready.
	if r, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: "mlp", Version: "2"}); err != nil || r.Ready {
		t.Errorf("ModelReady(mlp, version 2) = %v, %v; want ready false", r, err)
	}
	// Its metadata for another version is NOT_FOUND, as Triton answers it.
	if _, err := c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "mlp", Version: "2"}); status.Code(err) != codes.NotFound {
		t.Errorf("ModelMetadata(mlp, version 2) = %v, want NOT_FOUND", err)
	}
	if _, err := c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "mlp", Version: "1"}); err != nil {
		t.Errorf("ModelMetadata(mlp, version 1) = %v, want the metadata", err)
	}
	if r, err := c.ServerLive(context.Background(), &pb.ServerLiveRequest{}); err != nil || !r.Live {
		t.Errorf("ServerLive without a key (auth.exempt_health) = %v, %v", r, err)
	}
}

func grpcHealthReflection(t *testing.T, conn *grpc.ClientConn) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := healthpb.NewHealthClient(conn)
	for _, svc := range []string{"", "inference.GRPCInferenceService"} {
		if r, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: svc}); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health Check(%q) = %v, %v", svc, r, err)
		}
	}
	if _, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: "other"}); status.Code(err) != codes.NotFound {
		t.Errorf("health Check(other) = %v, want NOT_FOUND", err)
	}
	rs, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	r, err := rs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range r.GetListServicesResponse().GetService() {
		found = found || s.Name == "inference.GRPCInferenceService"
	}
	if !found {
		t.Errorf("reflection lists %v, without inference.GRPCInferenceService", r.GetListServicesResponse().GetService())
	}
}

// grpcStatistics runs after the infer subtests: the counts are theirs, and
// equal the HTTP route's.
func grpcStatistics(t *testing.T, in *instance, c pb.GRPCInferenceServiceClient, ctx context.Context) {
	var httpStats struct {
		ModelStats []struct {
			Name           string
			InferenceCount uint64 `json:"inference_count"`
			InferenceStats struct {
				Success struct{ Count uint64 }
			} `json:"inference_stats"`
		} `json:"model_stats"`
	}
	getJSON(t, in, "/v2/models/mlp/stats", &httpStats)
	r, err := c.ModelStatistics(ctx, &pb.ModelStatisticsRequest{Name: "mlp"})
	if err != nil {
		t.Fatal(err)
	}
	h := httpStats.ModelStats
	if len(r.ModelStats) != 1 || len(h) != 1 || r.ModelStats[0].Name != "mlp" || r.ModelStats[0].InferenceCount == 0 ||
		r.ModelStats[0].InferenceCount != h[0].InferenceCount || r.ModelStats[0].InferenceStats.GetSuccess().GetCount() != h[0].InferenceStats.Success.Count {
		t.Errorf("ModelStatistics = %v, GET /v2/models/mlp/stats = %+v", r, h)
	}
	all, err := c.ModelStatistics(ctx, &pb.ModelStatisticsRequest{})
	if err != nil || len(all.ModelStats) != 1 {
		t.Errorf("ModelStatistics of every model = %v, %v", all, err)
	}
	if _, err := c.ModelStatistics(ctx, &pb.ModelStatisticsRequest{Name: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("ModelStatistics(nope) = %v, want NOT_FOUND", err)
	}
}
