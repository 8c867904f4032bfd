package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

const tracingKey = "tracing-test-key-0123456789abcdef"

// otlpSpan is one span as the test's OTLP receiver got it.
type otlpSpan struct {
	process, name             string
	traceID, spanID, parentID string
}

// otlpReceiver is a real OTLP/gRPC trace service (the collector's
// TraceService), recording every span it is sent.
type otlpReceiver struct {
	coltrace.UnimplementedTraceServiceServer
	addr  string
	mu    sync.Mutex
	spans []otlpSpan
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{addr: ln.Addr().String()}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, r)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return r
}

func (r *otlpReceiver) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		process := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "supervisor.process" {
				process = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, otlpSpan{process: process, name: s.GetName(),
					traceID: hex.EncodeToString(s.GetTraceId()), spanID: hex.EncodeToString(s.GetSpanId()),
					parentID: hex.EncodeToString(s.GetParentSpanId())})
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// trace is the spans of traceID received so far, by name.
func (r *otlpReceiver) trace(traceID string) map[string]otlpSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]otlpSpan{}
	for _, s := range r.spans {
		if s.traceID == traceID {
			out[s.name] = s
		}
	}
	return out
}

// The spans of one traced request, each the child of the one after it
// in the chain (the stages are children of their process's span).
var (
	traceChain  = []string{"infer", "prep.forward", "prep", "master.forward", "master"}
	traceStages = map[string]string{"prep.parse": "prep", "prep.cache": "prep", "infer.queue": "infer", "infer.batch": "infer", "infer.run": "infer"}
)

// TestTracingOTLP: with a tracing endpoint (a real OTLP receiver in the
// test) and trace_level OFF globally, POST /v2/models/mlp/trace/setting
// turns tracing on for mlp alone without a reload; a request that sends a
// W3C traceparent then yields master, prep and infer spans, all of its
// trace id, chained client span -> master -> master.forward -> prep ->
// prep.forward -> infer, with the stages below their process's span. A
// request after the override is cleared is not traced. The settings
// routes refuse a caller without the API key (401, UNAUTHENTICATED),
// bad values (400 with a V2 error, INVALID_ARGUMENT) and unknown models
// (404), and GET /v2 lists "trace". A gRPC ModelInfer's traceparent
// metadata is its master span's parent.
func TestTracingOTLP(t *testing.T) {
	rcv := startOTLPReceiver(t)
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		extra: "auth:\n  api_keys: [\"" + tracingKey + "\"]\ntracing:\n  endpoint: " + rcv.addr + "\n  level: off\n  rate: 1\n"})
	key := map[string]string{"X-API-Key": tracingKey}
	settings := func(code int, resp []byte, _ http.Header) map[string]any {
		t.Helper()
		var m map[string]any
		if code != http.StatusOK || json.Unmarshal(resp, &m) != nil {
			t.Fatalf("trace settings: %d %s", code, resp)
		}
		return m
	}

	code, resp, _ := in.do(http.MethodGet, "/v2", nil, key)
	if code != http.StatusOK || !strings.Contains(string(resp), `"trace"`) {
		t.Fatalf("GET /v2 with tracing on: %d %s, want \"trace\" among the extensions", code, resp)
	}

	// No key: 401 on every trace route and method.
	for _, path := range []string{"/v2/trace/setting", "/v2/models/mlp/trace/setting"} {
		for m, b := range map[string][]byte{http.MethodGet: nil, http.MethodPost: []byte(`{"trace_level":["TIMESTAMPS"]}`)} {
			if code, resp, _ := in.do(m, path, b, nil); code != http.StatusUnauthorized {
				t.Fatalf("%s %s without a key: %d %s, want 401", m, path, code, resp)
			}
		}
	}
	if s := settings(in.do(http.MethodGet, "/v2/trace/setting", nil, key)); !slices.Equal(toStrings(s["trace_level"]), []string{"OFF"}) ||
		s["trace_rate"] != "1" || s["trace_count"] != "-1" || s["trace_mode"] != "opentelemetry" {
		t.Fatalf("GET /v2/trace/setting from the config: %v", s)
	}

	// Bad settings: 400 with a V2 error naming the reason; unknown model 404.
	for bad, reason := range map[string]string{
		`{"trace_level":["TENSORS"]}`: "not served",
		`{"trace_rate":"0"}`:          "at least 1",
		`{"trace_count":"-3"}`:        "-1 (no bound)",
		`{"trace_file":"/tmp/t"}`:     "never to a file",
		`{"trace_sauce":"1"}`:         "unknown trace setting",
		`trace_rate=1`:                "not a JSON object",
	} {
		code, resp, _ := in.post("/v2/models/mlp/trace/setting", []byte(bad), key)
		var e struct{ Error string }
		if code != http.StatusBadRequest || json.Unmarshal(resp, &e) != nil || !strings.Contains(e.Error, reason) {
			t.Errorf("POST %s: %d %s, want 400 {\"error\":...%q...}", bad, code, resp, reason)
		}
	}
	if code, resp, _ := in.do(http.MethodGet, "/v2/models/nosuch/trace/setting", nil, key); code != http.StatusNotFound {
		t.Errorf("GET an unknown model's trace settings: %d %s, want 404", code, resp)
	}

	// The model's override: TIMESTAMPS for mlp, the global stays OFF.
	if s := settings(in.post("/v2/models/mlp/trace/setting", []byte(`{"trace_level":["TIMESTAMPS"]}`), key)); !slices.Equal(toStrings(s["trace_level"]), []string{"TIMESTAMPS"}) {
		t.Fatalf("POST mlp trace_level TIMESTAMPS answered %v", s)
	}
	if s := settings(in.do(http.MethodGet, "/v2/trace/setting", nil, key)); !slices.Equal(toStrings(s["trace_level"]), []string{"OFF"}) {
		t.Fatalf("a model's POST changed the global settings: %v", s)
	}

	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	inferTraced := func(traceID, parent string) {
		t.Helper()
		hdr := map[string]string{"X-API-Key": tracingKey, "traceparent": "00-" + traceID + "-" + parent + "-01"}
		if code, resp, _ := in.post("/v2/models/mlp/infer", body, hdr); code != http.StatusOK {
			t.Fatalf("infer: %d %s", code, resp)
		}
	}
	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	inferTraced(clientTrace, clientSpan)
	var spans map[string]otlpSpan
	pollUntil(t, 30*time.Second, "the request's spans from master, prep and infer", func() bool {
		spans = rcv.trace(clientTrace)
		return len(spans) == len(traceChain)+len(traceStages)
	})
	parentOf := map[string]string{"master": clientSpan}
	for i, name := range traceChain[:len(traceChain)-1] {
		parentOf[name] = spans[traceChain[i+1]].spanID
	}
	for name, parent := range traceStages {
		parentOf[name] = spans[parent].spanID
	}
	for name, want := range parentOf {
		s, ok := spans[name]
		if !ok || s.parentID != want {
			t.Errorf("span %q: %+v, want parent %s", name, s, want)
		}
	}
	for name, process := range map[string]string{"master": "master", "prep": "prep-0", "infer": "infer-0"} {
		if spans[name].process != process {
			t.Errorf("span %q from process %q, want %q", name, spans[name].process, process)
		}
	}

	// Cleared, mlp follows the global OFF: not traced. A later traced
	// request's spans arriving shows the untraced one's would have come.
	if s := settings(in.post("/v2/models/mlp/trace/setting", []byte(`{"trace_level":null}`), key)); !slices.Equal(toStrings(s["trace_level"]), []string{"OFF"}) {
		t.Fatalf("clearing mlp's trace_level answered %v", s)
	}
	const untraced, later = "11111111111111111111111111111111", "22222222222222222222222222222222"
	inferTraced(untraced, clientSpan)

	// gRPC TraceSetting: the same admission and settings.
	c := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	if _, err := c.TraceSetting(withKey(t, "x-other", "none"), &pb.TraceSettingRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("TraceSetting without a key: %v, want UNAUTHENTICATED", err)
	}
	ctx := withKey(t, "authorization", "Bearer "+tracingKey)
	val := func(v ...string) *pb.TraceSettingRequest_SettingValue {
		return &pb.TraceSettingRequest_SettingValue{Value: v}
	}
	if _, err := c.TraceSetting(ctx, &pb.TraceSettingRequest{ModelName: "mlp",
		Settings: map[string]*pb.TraceSettingRequest_SettingValue{"trace_rate": val("0")}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("TraceSetting trace_rate 0: %v, want INVALID_ARGUMENT", err)
	}
	r, err := c.TraceSetting(ctx, &pb.TraceSettingRequest{ModelName: "mlp",
		Settings: map[string]*pb.TraceSettingRequest_SettingValue{"trace_level": val("TIMESTAMPS")}})
	if err != nil || !slices.Equal(r.GetSettings()["trace_level"].GetValue(), []string{"TIMESTAMPS"}) || !slices.Equal(r.GetSettings()["trace_rate"].GetValue(), []string{"1"}) {
		t.Fatalf("TraceSetting mlp TIMESTAMPS: %v, %v", r, err)
	}
	if r, err := c.TraceSetting(ctx, &pb.TraceSettingRequest{}); err != nil || !slices.Equal(r.GetSettings()["trace_level"].GetValue(), []string{"OFF"}) {
		t.Fatalf("TraceSetting global read: %v, %v", r, err)
	}
	inferTraced(later, clientSpan)
	// And over gRPC: the client's traceparent metadata is the parent.
	const grpcTrace = "33333333333333333333333333333333"
	mdCtx := metadata.AppendToOutgoingContext(ctx, "traceparent", "00-"+grpcTrace+"-"+clientSpan+"-01")
	if _, err := c.ModelInfer(mdCtx, mlpRequest("traced", seq(16, 1))); err != nil {
		t.Fatalf("ModelInfer with a traceparent: %v", err)
	}
	pollUntil(t, 30*time.Second, "the later traced requests' spans (HTTP and gRPC)", func() bool {
		return len(rcv.trace(later)) == len(traceChain)+len(traceStages) && len(rcv.trace(grpcTrace)) == len(traceChain)+len(traceStages)
	})
	if m := rcv.trace(grpcTrace)["master"]; m.parentID != clientSpan {
		t.Errorf("gRPC request's master span %+v, want the client's span %s as its parent", m, clientSpan)
	}
	mr, err := http.Get(in.metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mr.Body)
	mr.Body.Close()
	if !regexp.MustCompile(`(?m)^supervisor_trace_spans_total\{process="master",outcome="exported"\} [1-9]`).Match(metrics) {
		t.Errorf("/metrics does not count the master's exported spans:\n%s", grepLines(string(metrics), "supervisor_trace_"))
	}
	if got := rcv.trace(untraced); len(got) != 0 {
		t.Fatalf("a request of a model whose tracing was cleared was traced: %v", got)
	}
}

// grepLines are the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}
