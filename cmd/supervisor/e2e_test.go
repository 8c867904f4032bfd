package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// v2Tensor is a V2 request/response tensor as a client writes it.
type v2Tensor struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
	Data     any     `json:"data"`
}

type v2Response struct {
	ModelName string `json:"model_name"`
	Outputs   []struct {
		Name     string            `json:"name"`
		Datatype string            `json:"datatype"`
		Shape    []int64           `json:"shape"`
		Data     []json.RawMessage `json:"data"`
	} `json:"outputs"`
	Error string `json:"error"`
}

func inferBody(t *testing.T, inputs ...v2Tensor) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"inputs": inputs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func seq(n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.Sin(float64(i)*0.37)) * scale
	}
	return v
}

// openLocal opens a generated model in this process, the reference the
// served results are compared with.
func openLocal(t *testing.T, file string) *ort.Session {
	t.Helper()
	model, err := os.ReadFile(filepath.Join(modelsDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return orttest.Open(t, file, model, ort.Options{IntraOpThreads: 1})
}

func TestInferenceMatchesInProcessORT(t *testing.T) {
	in := startInstance(t, options{})
	orttest.Init(t)

	cases := []struct {
		model, file string
		inputs      []tensor.Tensor
		json        []v2Tensor
	}{
		{"mlp", "mlp.onnx",
			[]tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{3, 16}, Data: orttest.F32Bytes(seq(48, 2))}},
			[]v2Tensor{{"x", "FP32", []int64{3, 16}, seq(48, 2)}}},
		{"mlp", "mlp.onnx",
			[]tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{1, 16}, Data: orttest.F32Bytes(seq(16, 1))}},
			[]v2Tensor{{"x", "FP32", []int64{1, 16}, [][]float32{seq(16, 1)}}}}, // nested data
		{"default", "default.onnx",
			[]tensor.Tensor{{Name: "input", DType: tensor.FP32, Shape: []int64{1, 3, 224, 224}, Data: orttest.F32Bytes(seq(3*224*224, 1))}},
			[]v2Tensor{{"input", "FP32", []int64{1, 3, 224, 224}, seq(3*224*224, 1)}}},
		{"fixed", "fixed.onnx",
			[]tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{2, 3}, Data: orttest.F32Bytes(seq(6, 3))}},
			[]v2Tensor{{"x", "FP32", []int64{2, 3}, seq(6, 3)}}},
		{"types", "types.onnx",
			[]tensor.Tensor{
				{Name: "ids", DType: tensor.Int64, Shape: []int64{2, 4}, Data: orttest.I64Bytes([]int64{1, -2, 3, 1 << 40, 5, 6, -7, 8})},
				{Name: "mask", DType: tensor.Bool, Shape: []int64{2, 4}, Data: orttest.BoolBytes([]bool{true, false, true, true, false, false, true, false})}},
			[]v2Tensor{
				{"ids", "INT64", []int64{2, 4}, []int64{1, -2, 3, 1 << 40, 5, 6, -7, 8}},
				{"mask", "BOOL", []int64{2, 4}, []bool{true, false, true, true, false, false, true, false}}}},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			sess := openLocal(t, c.file)
			want, err := sess.Run(c.inputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			code, body, hdr := in.post("/v2/models/"+c.model+"/infer", inferBody(t, c.json...), nil)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			if hdr.Get("X-Request-Id") == "" {
				t.Error("response has no X-Request-Id")
			}
			var got v2Response
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("decode response: %v\n%.300s", err, body)
			}
			if len(got.Outputs) != len(want) {
				t.Fatalf("got %d outputs, want %d", len(got.Outputs), len(want))
			}
			for i, w := range want {
				g := got.Outputs[i]
				if g.Name != w.Name || g.Datatype != w.DType.String() || tensor.FormatShape(g.Shape) != tensor.FormatShape(w.Shape) {
					t.Fatalf("output %d is %s %s %v, want %s %s %v", i, g.Name, g.Datatype, g.Shape, w.Name, w.DType, w.Shape)
				}
				compareData(t, w, g.Data)
			}
		})
	}
}

// compareData checks served JSON values against the in-process tensor:
// FP32 within 1e-5 relative (float32 text round-trips exactly; the margin
// only covers a different thread schedule), integers and BOOL exactly.
func compareData(t *testing.T, want tensor.Tensor, got []json.RawMessage) {
	t.Helper()
	var ref []string
	switch want.DType {
	case tensor.FP32:
		for _, v := range orttest.F32s(want.Data) {
			ref = append(ref, fmt.Sprint(v))
		}
	case tensor.Int64:
		for _, v := range orttest.I64s(want.Data) {
			ref = append(ref, fmt.Sprint(v))
		}
	case tensor.Bool:
		for _, v := range want.Data {
			ref = append(ref, fmt.Sprint(v != 0))
		}
	default:
		t.Fatalf("no comparison for %s", want.DType)
	}
	if len(got) != len(ref) {
		t.Fatalf("%s: got %d values, want %d", want.Name, len(got), len(ref))
	}
	for i := range ref {
		if want.DType != tensor.FP32 {
			if string(got[i]) != ref[i] {
				t.Fatalf("%s[%d] = %s, want %s", want.Name, i, got[i], ref[i])
			}
			continue
		}
		var g, w float64
		_ = json.Unmarshal(got[i], &g)
		_ = json.Unmarshal([]byte(ref[i]), &w)
		if math.Abs(g-w) > 1e-5*math.Max(1, math.Abs(w)) {
			t.Fatalf("%s[%d] = %v, want %v", want.Name, i, g, w)
		}
	}
}

func TestModelMetadata(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1})
	code, body, _ := in.get("/v2/models/default")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var md struct {
		Name   string `json:"name"`
		Inputs []struct {
			Name     string  `json:"name"`
			Datatype string  `json:"datatype"`
			Shape    []int64 `json:"shape"`
		} `json:"inputs"`
		Outputs []struct {
			Name     string  `json:"name"`
			Datatype string  `json:"datatype"`
			Shape    []int64 `json:"shape"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(body, &md); err != nil {
		t.Fatal(err)
	}
	in0, out0 := md.Inputs[0], md.Outputs[0]
	if md.Name != "default" || in0.Name != "input" || in0.Datatype != "FP32" || tensor.FormatShape(in0.Shape) != "[-1,3,224,224]" ||
		out0.Name != "logits" || out0.Datatype != "FP32" || tensor.FormatShape(out0.Shape) != "[-1,1000]" {
		t.Fatalf("metadata = %s", body)
	}
	for _, p := range []string{"/v2/health/live", "/v2/health/ready", "/v2/models/default/ready", "/v2"} {
		if code, body, _ := in.get(p); code != http.StatusOK {
			t.Errorf("GET %s = %d %s, want 200", p, code, body)
		}
	}
}

func TestBadRequestsGetV2Errors(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, maxBodyBytes: "1MiB"})
	mlp := "/v2/models/mlp/infer"
	cases := []struct {
		name, method, path string
		body               string
		status             int
		wantInMsg          []string
	}{
		{"malformed JSON", "POST", mlp, `{"inputs": [`, 400, []string{"JSON"}},
		{"wrong dtype", "POST", mlp, `{"inputs":[{"name":"x","datatype":"INT32","shape":[1,16],"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}]}`, 400, []string{`"x"`, "INT32", "FP32"}},
		{"wrong shape", "POST", mlp, `{"inputs":[{"name":"x","datatype":"FP32","shape":[2,3],"data":[1,2,3,4,5,6]}]}`, 400, []string{`"x"`, "[2,3]", "[-1,16]"}},
		{"count mismatch", "POST", mlp, `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"data":[1,2,3]}]}`, 400, []string{`"x"`}},
		{"missing input", "POST", "/v2/models/types/infer", `{"inputs":[{"name":"ids","datatype":"INT64","shape":[1,4],"data":[1,2,3,4]}]}`, 400, []string{`"mask"`}},
		{"unknown model", "POST", "/v2/models/nope/infer", `{"inputs":[]}`, 404, []string{`"nope"`}},
		{"unknown model version", "GET", "/v2/models/mlp/versions/2", "", 404, []string{`"mlp"`, `"2"`}},
		{"wrong method", "GET", mlp, "", 405, []string{"POST"}},
		{"unknown route", "GET", "/nope", "", 404, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body, hdr := in.do(c.method, c.path, []byte(c.body), nil)
			if code != c.status {
				t.Fatalf("status %d, want %d: %s", code, c.status, body)
			}
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
				t.Fatalf("body is not a V2 error: %q", body)
			}
			for _, s := range c.wantInMsg {
				if !strings.Contains(e.Error, s) {
					t.Errorf("error %q does not mention %s", e.Error, s)
				}
			}
			if hdr.Get("X-Request-Id") == "" {
				t.Error("error response has no X-Request-Id")
			}
		})
	}
	t.Run("oversize body", func(t *testing.T) {
		// The server answers 413 from Content-Length alone and closes, so
		// send only the headers: a client still writing a body may see the
		// close before it reads the answer.
		resp := rawExchange(t, in, "POST "+mlp+" HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n")
		if !strings.HasPrefix(resp, "HTTP/1.1 413") || !strings.Contains(resp, "max_body_bytes") || !strings.Contains(resp, "X-Request-Id") {
			t.Fatalf("response = %q, want 413 with a V2 error naming max_body_bytes and an X-Request-Id", resp)
		}
	})
	// None of that may have hurt the workers.
	code, body, _ := in.post(mlp, inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)}), nil)
	if code != http.StatusOK {
		t.Fatalf("a good request after the bad ones: %d %s", code, body)
	}
	for _, w := range in.status().Workers {
		if w.Restarts != 0 || w.State != "ready" {
			t.Errorf("worker %s: state %s, %d restarts after bad requests", w.Name, w.State, w.Restarts)
		}
	}
}

// rawExchange writes raw bytes to the public listener and returns all the
// server sends back until it closes or 10s pass.
func rawExchange(t *testing.T, in *instance, raw string) string {
	t.Helper()
	conn := in.dial(t)
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(conn)
	return string(b)
}

func TestRequestIDPropagated(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1})
	_, _, hdr := in.do("GET", "/v2/models/mlp", nil, map[string]string{"X-Request-Id": "abc-123"})
	if got := hdr.Get("X-Request-Id"); got != "abc-123" {
		t.Fatalf("X-Request-Id = %q, want abc-123", got)
	}
}

func TestSIGTERMStopsEverythingAndCleansUp(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 2, inferWorkers: 2})
	st := in.status()
	if len(st.Workers) != 4 {
		t.Fatalf("status lists %d workers, want 4: %+v", len(st.Workers), st.Workers)
	}
	in.terminate(30 * time.Second)
	for _, w := range st.Workers {
		if !processGone(w.PID) {
			t.Errorf("worker %s (pid %d) outlived the master", w.Name, w.PID)
		}
	}
	if _, err := os.Stat(in.runtimeDir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(in.runtimeDir)
		t.Errorf("runtime dir %s still exists (err %v) with %d entries", in.runtimeDir, err, len(entries))
	}
}

func TestStopCommand(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1})
	out, err := in.cli("stop")
	if err != nil {
		t.Fatalf("supervisor stop: %v\n%s", err, out)
	}
	in.waitExit(30 * time.Second)
	if _, err := os.Stat(in.runtimeDir); !os.IsNotExist(err) {
		t.Errorf("runtime dir %s still exists after stop returned", in.runtimeDir)
	}
}

func TestTwoInstancesDoNotCollide(t *testing.T) {
	a := startInstance(t, options{prepWorkers: 1})
	b := startInstance(t, options{prepWorkers: 1})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	for _, in := range []*instance{a, b} {
		if code, resp, _ := in.post("/v2/models/mlp/infer", body, nil); code != http.StatusOK {
			t.Fatalf("%s: %d %s", in.url, code, resp)
		}
	}
	a.terminate(30 * time.Second)
	if code, resp, _ := b.post("/v2/models/mlp/infer", body, nil); code != http.StatusOK {
		t.Fatalf("second instance after the first stopped: %d %s", code, resp)
	}
	b.terminate(30 * time.Second)
}

func TestKilledWorkerIsRestarted(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	for _, role := range []string{"prep", "infer"} {
		var victim int
		for _, w := range in.status().Workers {
			if w.Role == role {
				victim = w.PID
			}
		}
		if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		pollUntil(t, 60*time.Second, role+" worker restarted after SIGKILL", func() bool {
			for _, w := range in.status().Workers {
				if w.Role == role && w.PID != victim && w.PID != 0 && w.State == "ready" && w.Restarts == 1 &&
					strings.Contains(w.LastExit, "killed") {
					return true
				}
			}
			return false
		})
		in.waitReady(30 * time.Second)
		if code, resp, _ := in.post("/v2/models/mlp/infer", body, nil); code != http.StatusOK {
			t.Fatalf("after restarting %s: %d %s", role, code, resp)
		}
	}
}

// TestControlSocketPermissions: the control socket is 0600 by default and
// 0660 owned by control_group when one is set (as root, a group other than
// the master's own, so the chown shows).
func TestControlSocketPermissions(t *testing.T) {
	other, otherGID := fmt.Sprint(os.Getgid()), os.Getgid()
	if g, err := user.LookupGroup("daemon"); err == nil && os.Getuid() == 0 {
		other = g.Name
		otherGID, _ = strconv.Atoi(g.Gid)
	}
	for _, group := range []string{"", other} {
		extra := ""
		if group != "" {
			extra = "control_group: \"" + group + "\"\n"
		}
		in := startInstance(t, options{prepWorkers: 1, extra: extra})
		fi, err := os.Stat(control.SocketPath(in.runtimeDir))
		if err != nil {
			t.Fatal(err)
		}
		wantMode, wantGID := os.FileMode(0o600), os.Getgid()
		if group != "" {
			wantMode, wantGID = 0o660, otherGID
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != wantMode || int(st.Gid) != wantGID {
			t.Errorf("control_group %q: socket mode %v gid %d, want %v gid %d", group, fi.Mode().Perm(), st.Gid, wantMode, wantGID)
		}
		in.terminate(30 * time.Second)
	}
}
