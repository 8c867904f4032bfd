package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

const loggingKey = "logging-test-key-0123456789abcdef"

// logLine is one JSON line of an instance's log.
type logLine struct {
	Role     string `json:"role"`
	PID      int    `json:"pid"`
	Level    string `json:"level"`
	Message  string `json:"message"`
	LogLevel string `json:"log_level"`
}

// logLines parses an instance's log (lines that are not JSON skipped).
func logLines(in *instance) []logLine {
	var out []logLine
	sc := bufio.NewScanner(strings.NewReader(in.log.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// logged counts the lines of pid (0: any) with message msg.
func logged(in *instance, pid int, msg string) int {
	n := 0
	for _, l := range logLines(in) {
		if l.Message == msg && (pid == 0 || l.PID == pid) {
			n++
		}
	}
	return n
}

func inferPID(t *testing.T, in *instance) int {
	t.Helper()
	for _, w := range in.status().Workers {
		if w.Role == "infer" && w.State == "ready" {
			return w.PID
		}
	}
	t.Fatal("no ready infer worker")
	return 0
}

// TestLoggingExtension: POST /v2/logging with log_verbose_level 1 makes
// the infer worker log its debug line per request without a reload, GET
// reflects it, a worker killed and restarted comes back at it, gRPC
// LogSettings sets and reads the same, no key is 401/UNAUTHENTICATED,
// bad settings are 400/INVALID_ARGUMENT with the reason, and a reload
// keeps the API's level unless it changes log_level.
func TestLoggingExtension(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		extra: "log_level: info\nauth:\n  api_keys: [\"" + loggingKey + "\"]\n"})
	key := map[string]string{"X-API-Key": loggingKey}
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	infer := func() {
		t.Helper()
		if code, resp, _ := in.post("/v2/models/mlp/infer", body, key); code != http.StatusOK {
			t.Fatalf("infer: %d %s", code, resp)
		}
	}
	settings := func(code int, resp []byte, _ http.Header) map[string]any {
		t.Helper()
		var m map[string]any
		if code != http.StatusOK || json.Unmarshal(resp, &m) != nil {
			t.Fatalf("logging settings: %d %s", code, resp)
		}
		return m
	}

	// No key: 401 on both methods, before anything else is looked at.
	for m, b := range map[string][]byte{http.MethodGet: nil, http.MethodPost: []byte(`{"log_verbose_level":1}`)} {
		if code, resp, _ := in.do(m, "/v2/logging", b, nil); code != http.StatusUnauthorized {
			t.Fatalf("%s /v2/logging without a key: %d %s, want 401", m, code, resp)
		}
	}
	code, resp, _ := in.do(http.MethodGet, "/v2/logging", nil, key)
	if want := `{"log_file":"","log_info":true,"log_warning":true,"log_error":true,"log_verbose_level":0,"log_format":"default"}`; code != http.StatusOK || string(resp) != want {
		t.Fatalf("GET /v2/logging at log_level info: %d %s, want 200 %s", code, resp, want)
	}
	infer()
	if n := logged(in, 0, "inference answered"); n != 0 {
		t.Fatalf("%d debug lines at log_level info", n)
	}

	// Verbose on: the master answers the new settings, and the running
	// infer worker logs its debug line per request.
	if s := settings(in.post("/v2/logging", []byte(`{"log_verbose_level":1}`), key)); s["log_verbose_level"] != 1.0 || s["log_info"] != true {
		t.Fatalf("POST log_verbose_level 1 answered %v", s)
	}
	if s := settings(in.do(http.MethodGet, "/v2/logging", nil, key)); s["log_verbose_level"] != 1.0 {
		t.Fatalf("GET after POST log_verbose_level 1: %v", s)
	}
	pid := inferPID(t, in)
	pollUntil(t, 10*time.Second, "the running infer worker's debug line", func() bool {
		infer()
		return logged(in, pid, "inference answered") > 0
	})

	// A worker killed and restarted starts at the run-time level.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var restarted int
	pollUntil(t, 60*time.Second, "infer worker restarted", func() bool {
		for _, w := range in.status().Workers {
			if w.Role == "infer" && w.PID != pid && w.PID != 0 && w.State == "ready" {
				restarted = w.PID
				return true
			}
		}
		return false
	})
	in.waitReady(30 * time.Second)
	infer()
	pollUntil(t, 10*time.Second, "the restarted infer worker's debug line", func() bool {
		return logged(in, restarted, "inference answered") > 0
	})

	// Bad settings: 400 with the reason, the level unchanged.
	for bad, reason := range map[string]string{
		`{"log_format":"ISO8601"}`:              "JSON lines",
		`{"log_file":"/tmp/supervisor.log"}`:    "stderr",
		`{"log_error":false}`:                   "errors are always logged",
		`{"log_info":true,"log_warning":false}`: "threshold",
		`{"log_verbose_level":-1}`:              "integer from 0",
		`{"verbose":1}`:                         "unknown logging setting",
		`log_verbose_level=1`:                   "not a JSON object",
	} {
		code, resp, _ := in.post("/v2/logging", []byte(bad), key)
		if code != http.StatusBadRequest || !strings.Contains(string(resp), reason) {
			t.Errorf("POST %s: %d %s, want 400 with %q", bad, code, resp, reason)
		}
	}
	if code, resp, _ := in.do(http.MethodPut, "/v2/logging", nil, key); code != http.StatusMethodNotAllowed {
		t.Errorf("PUT /v2/logging: %d %s, want 405", code, resp)
	}
	if s := settings(in.do(http.MethodGet, "/v2/logging", nil, key)); s["log_verbose_level"] != 1.0 {
		t.Fatalf("a refused POST changed the settings: %v", s)
	}

	// gRPC: no key is UNAUTHENTICATED; log_info false is warn, and the
	// worker, once it has taken it, logs no debug line.
	c := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	if _, err := c.LogSettings(withKey(t, "x-other", "none"), &pb.LogSettingsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("LogSettings without a key: %v, want UNAUTHENTICATED", err)
	}
	ctx := withKey(t, "authorization", "Bearer "+loggingKey)
	boolean := func(b bool) *pb.LogSettingsRequest_SettingValue {
		return &pb.LogSettingsRequest_SettingValue{ParameterChoice: &pb.LogSettingsRequest_SettingValue_BoolParam{BoolParam: b}}
	}
	r, err := c.LogSettings(ctx, &pb.LogSettingsRequest{Settings: map[string]*pb.LogSettingsRequest_SettingValue{"log_info": boolean(false)}})
	if err != nil {
		t.Fatal(err)
	}
	got := r.GetSettings()
	if got["log_info"].GetBoolParam() || !got["log_warning"].GetBoolParam() || !got["log_error"].GetBoolParam() ||
		got["log_verbose_level"].GetUint32Param() != 0 || got["log_format"].GetStringParam() != "default" || len(got) != 6 {
		t.Fatalf("LogSettings log_info false answered %v", got)
	}
	if r, err := c.LogSettings(ctx, &pb.LogSettingsRequest{}); err != nil || r.GetSettings()["log_info"].GetBoolParam() {
		t.Fatalf("LogSettings read after log_info false: %v, %v", r, err)
	}
	if s := settings(in.do(http.MethodGet, "/v2/logging", nil, key)); s["log_info"] != false || s["log_warning"] != true {
		t.Fatalf("GET after gRPC log_info false: %v", s)
	}
	pollUntil(t, 10*time.Second, "the infer worker taking warn", func() bool {
		for _, l := range logLines(in) {
			if l.PID == restarted && l.Message == "log level set by the master" && l.LogLevel == "warn" {
				return true
			}
		}
		return false
	})
	before := logged(in, restarted, "inference answered")
	infer()
	if after := logged(in, restarted, "inference answered"); after != before {
		t.Fatalf("a debug line at warn (%d, then %d)", before, after)
	}
	_, err = c.LogSettings(ctx, &pb.LogSettingsRequest{Settings: map[string]*pb.LogSettingsRequest_SettingValue{
		"log_format": {ParameterChoice: &pb.LogSettingsRequest_SettingValue_StringParam{StringParam: "ISO8601"}}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "JSON lines") {
		t.Fatalf("LogSettings log_format ISO8601: %v, want INVALID_ARGUMENT with the reason", err)
	}

	// A reload that leaves log_level as it was keeps the API's level; one
	// that changes it wins.
	reloadEdited(t, in, "log_level: info", "log_level: info ")
	if s := settings(in.do(http.MethodGet, "/v2/logging", nil, key)); s["log_info"] != false {
		t.Fatalf("a reload without a log_level change reset the API's level: %v", s)
	}
	reloadEdited(t, in, "log_level: info ", "log_level: error")
	if s := settings(in.do(http.MethodGet, "/v2/logging", nil, key)); s["log_warning"] != false || s["log_error"] != true {
		t.Fatalf("a reload to log_level error left %v", s)
	}
}
