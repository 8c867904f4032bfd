package main

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// firstBuffer is the master's first body buffer (supervisor/front bodyread.go):
// what a body refused by its prefix check may cost the master.
const firstBuffer = 64 << 10

// sendWhole posts body on a fresh connection as a client that writes all
// of it whatever the answer (the write fails once the master closes), and
// returns the answer.
func sendWhole(t *testing.T, in *instance, model, ctype, extra string, body []byte) (int, string) {
	t.Helper()
	c := in.dial(t)
	head := fmt.Sprintf("POST /v2/models/%s/infer HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n%sContent-Length: %d\r\n\r\n", model, ctype, extra, len(body))
	go func() { _, _ = c.Write(append([]byte(head), body...)) }()
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a %d-byte %s body: %v", len(body), ctype, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPrefixCheckEndToEnd: against a real master, prep and infer worker,
// a 64 MiB BYTES flood (JSON and binary), 1 MiB of garbage JSON and a
// JPEG scan bomb are each refused with their 400 after the master read
// at most its first body buffer; legitimate large requests (photo batches
// in JSON and binary, a large MLP request) are checked, pass, and get the
// same outputs as without the check.
func TestPrefixCheckEndToEnd(t *testing.T) {
	dir := sharedTestdata(t)
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}, maxBodyBytes: "64MiB",
		modelItems: squeezenetItem(dir, 0)})
	floodBin, floodHL := hostile.BytesFloodBinary("data_0", (64<<20-256)/4)
	attacks := []struct {
		name, model, ctype, extra string
		body                      []byte
		want                      string
	}{
		{"BYTES flood, JSON", "squeezenet", "application/json", "", hostile.BytesFloodJSON("data_0", (64<<20-256)/3), "more than the 64 allowed"},
		{"BYTES flood, binary", "squeezenet", "application/octet-stream", fmt.Sprintf("Inference-Header-Content-Length: %d\r\n", floodHL), floodBin, "more than the 64 allowed"},
		{"garbage JSON", "mlp", "application/json", "", []byte(`{"inputs":[` + strings.Repeat("[", 1<<20)), "inputs[0] must be an object"},
		{"JPEG scan bomb", "squeezenet", "image/jpeg", "", hostile.ScanBombJPEG(8000), "image too costly to decode"},
	}
	for _, a := range attacks {
		before := metricValue(t, in, "supervisor_body_bytes_read_total")
		status, msg := sendWhole(t, in, a.model, a.ctype, a.extra, a.body)
		read := metricValue(t, in, "supervisor_body_bytes_read_total") - before
		if status != http.StatusBadRequest || !strings.Contains(msg, a.want) {
			t.Errorf("%s: %d %s, want 400 containing %q", a.name, status, msg, a.want)
		}
		if read > firstBuffer {
			t.Errorf("%s: the master read %.0f bytes of a %d-byte body refused from its first %d", a.name, read, len(a.body), firstBuffer)
		}
	}
	if n := metricValue(t, in, `supervisor_prefix_checks_total{outcome="refused"}`); n != float64(len(attacks)) {
		t.Errorf("%v prefix checks refused, want %d", n, len(attacks))
	}
	t.Run("photo batches", func(t *testing.T) { testPrefixCheckPhotos(t, in, dir) })
	t.Run("large MLP", func(t *testing.T) { testPrefixCheckMLP(t, in) })
}

// testPrefixCheckPhotos: a batch of real photos over 64 KiB, in JSON and
// with the binary extension, passes the check and is classified as each
// photo is alone.
func testPrefixCheckPhotos(t *testing.T, in *instance, dir string) {
	var photos [][]byte
	for _, name := range []string{"ortex_goldfish.jpg", "ortex_wolves.jpg", "ortext_pineapple.png"} {
		b, err := os.ReadFile(filepath.Join(dir, "images", name))
		if err != nil {
			t.Fatal(err)
		}
		photos = append(photos, b)
	}
	passed := metricValue(t, in, `supervisor_prefix_checks_total{outcome="passed"}`)
	var alone []json.RawMessage
	for _, p := range photos {
		alone = append(alone, scores(t, in, "application/json", "", jsonPhotos(p))...)
	}
	bin, hl := binaryPhotos(photos...)
	for _, form := range []struct {
		name, ctype, extra string
		body               []byte
	}{
		{"JSON", "application/json", "", jsonPhotos(photos...)},
		{"binary", "application/octet-stream", fmt.Sprintf("Inference-Header-Content-Length: %d\r\n", hl), bin},
	} {
		got := scores(t, in, form.ctype, form.extra, form.body)
		if len(got) != len(alone) {
			t.Fatalf("%s batch: %d score values, want %d", form.name, len(got), len(alone))
		}
		for i := range got {
			if string(got[i]) != string(alone[i]) {
				t.Fatalf("%s batch: score %d is %s, %s when each photo is sent alone", form.name, i, got[i], alone[i])
			}
		}
	}
	if now := metricValue(t, in, `supervisor_prefix_checks_total{outcome="passed"}`); now-passed < 4 {
		t.Errorf("%v prefix checks passed for 4 bodies over 64 KiB", now-passed)
	}
}

// scores posts an image request to SqueezeNet and returns its output's
// values, as sent.
func scores(t *testing.T, in *instance, ctype, extra string, body []byte) []json.RawMessage {
	t.Helper()
	status, resp := sendWhole(t, in, "squeezenet", ctype, extra, body)
	var r v2Response
	if status != http.StatusOK || json.Unmarshal([]byte(resp), &r) != nil || len(r.Outputs) != 1 {
		t.Fatalf("%d-byte %s request: %d %.300s", len(body), ctype, status, resp)
	}
	return r.Outputs[0].Data
}

func jsonPhotos(imgs ...[]byte) []byte {
	parts := make([]string, len(imgs))
	for i, b := range imgs {
		parts[i] = `"` + base64.StdEncoding.EncodeToString(b) + `"`
	}
	return []byte(fmt.Sprintf(`{"inputs":[{"name":"data_0","datatype":"BYTES","shape":[%d],"data":[%s]}]}`, len(imgs), strings.Join(parts, ",")))
}

func binaryPhotos(imgs ...[]byte) ([]byte, int) {
	var data []byte
	for _, b := range imgs {
		data = binary.LittleEndian.AppendUint32(data, uint32(len(b)))
		data = append(data, b...)
	}
	header := fmt.Sprintf(`{"inputs":[{"name":"data_0","datatype":"BYTES","shape":[%d,1],"parameters":{"binary_data_size":%d}}]}`, len(imgs), len(data))
	return append([]byte(header), data...), len(header)
}

// testPrefixCheckMLP: a 2.5 MB MLP request passes the check and gets
// ONNX Runtime's own answer.
func testPrefixCheckMLP(t *testing.T, in *instance) {
	orttest.Init(t)
	const rows = 8192
	x := seq(rows*16, 3)
	want, err := openLocal(t, "mlp.onnx").Run([]tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{rows, 16}, Data: orttest.F32Bytes(x)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{rows, 16}, x})
	if len(body) <= firstBuffer {
		t.Fatalf("the request is %d bytes: not over the first buffer, so not checked", len(body))
	}
	passed := metricValue(t, in, `supervisor_prefix_checks_total{outcome="passed"}`)
	status, resp := sendWhole(t, in, "mlp", "application/json", "", body)
	var got v2Response
	if status != http.StatusOK || json.Unmarshal([]byte(resp), &got) != nil || len(got.Outputs) != len(want) {
		t.Fatalf("%d %.300s", status, resp)
	}
	for i, w := range want {
		compareData(t, w, got.Outputs[i].Data)
	}
	if now := metricValue(t, in, `supervisor_prefix_checks_total{outcome="passed"}`); now != passed+1 {
		t.Errorf("prefix checks passed went from %v to %v for one large request", passed, now)
	}
}
