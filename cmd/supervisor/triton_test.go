package main

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	"github.com/supervisor-dev/supervisor/internal/httpcoding"
)

// rawClient sends no Accept-Encoding of its own and decompresses nothing,
// so a test sees the bytes and headers the server sent.
var rawClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// rawDo is one request through rawClient.
func (in *instance) rawDo(method, path string, body []byte, hdr map[string]string) (int, []byte, http.Header) {
	in.t.Helper()
	req, err := http.NewRequest(method, in.url+path, bytes.NewReader(body))
	if err != nil {
		in.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		in.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		in.t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	return resp.StatusCode, b, resp.Header
}

// TestModelConfiguration: GET /v2/models/{m}[/versions/{v}]/config answers
// Triton's model configuration from the served config and the model; /v2
// lists the extension.
func TestModelConfiguration(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp", "fixed"},
		batching: map[string]string{"mlp": "{max_batch_size: 8, max_queue_delay: 2ms, preferred_batch_sizes: [4], max_queue_size: 16, instances: 2}"}})
	var mlp map[string]any
	for _, p := range []string{"/v2/models/mlp/config", "/v2/models/mlp/versions/1/config"} {
		code, body, _ := in.get(p)
		if code != http.StatusOK || json.Unmarshal(body, &mlp) != nil {
			t.Fatalf("GET %s = %d %s", p, code, body)
		}
	}
	want := map[string]any{
		"name": "mlp", "platform": "onnxruntime_onnx", "backend": "onnxruntime", "max_batch_size": 8.0,
		"input": []any{map[string]any{"name": "x", "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": []any{16.0},
			"is_shape_tensor": false, "optional": false}},
		"dynamic_batching": map[string]any{"preferred_batch_size": []any{4.0}, "max_queue_delay_microseconds": 2000.0,
			"preserve_ordering": false, "priority_levels": 0.0, "default_priority_level": 0.0,
			"default_queue_policy": map[string]any{"timeout_action": "REJECT", "default_timeout_microseconds": 60e6,
				"allow_timeout_override": true, "max_queue_size": 16.0}},
		"instance_group": []any{map[string]any{"name": "mlp_cpu", "kind": "KIND_CPU", "count": 2.0, "gpus": []any{}}},
	}
	for k, w := range want {
		if !reflect.DeepEqual(mlp[k], w) {
			t.Errorf("mlp config %s = %v; want %v", k, mlp[k], w)
		}
	}
	code, body, _ := in.get("/v2/models/fixed/config")
	var fixed struct {
		MaxBatchSize    int             `json:"max_batch_size"`
		DynamicBatching json.RawMessage `json:"dynamic_batching"`
		Input           []struct {
			Dims []int64 `json:"dims"`
		} `json:"input"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &fixed) != nil || fixed.MaxBatchSize != 0 || fixed.DynamicBatching != nil ||
		len(fixed.Input) != 1 || len(fixed.Input[0].Dims) == 0 || fixed.Input[0].Dims[0] < 1 {
		t.Errorf("fixed config = %d %s; want max_batch_size 0, no dynamic_batching, dims with the batch dimension", code, body)
	}
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/v2/models/nope/config", http.StatusNotFound},
		{"POST", "/v2/models/mlp/config", http.StatusMethodNotAllowed},
		{"GET", "/v2/models/mlp/config/more", http.StatusNotFound},
	} {
		if code, body, _ := in.do(tc.method, tc.path, nil, nil); code != tc.want || !json.Valid(body) {
			t.Errorf("%s %s = %d %s; want %d with V2 error JSON", tc.method, tc.path, code, body, tc.want)
		}
	}
	var server struct {
		Extensions []string `json:"extensions"`
	}
	if code, body, _ := in.get("/v2"); code != http.StatusOK || json.Unmarshal(body, &server) != nil ||
		!reflect.DeepEqual(server.Extensions, []string{"binary_tensor_data", "classification", "logging", "model_configuration", "model_repository", "schedule_policy", "statistics", "system_shared_memory"}) {
		t.Errorf("GET /v2 = %d %s; want every implemented extension", code, body)
	}
}

// TestCompression: gzip and deflate request bodies, JSON and binary
// (Inference-Header-Content-Length counting in the decompressed body, as
// Triton's), get exactly the answer of the plain body; responses come
// compressed as Accept-Encoding asks and decompress to the identity
// answer; bombs get 413, unknown codings 415, and the server serves on.
func TestCompression(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}, maxBodyBytes: "1MiB"})
	jsonBody := inferBody(t, v2Tensor{"x", "FP32", []int64{2, 16}, seq(32, 3)})
	header := []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[2,16],"parameters":{"binary_data_size":128}}],` +
		`"outputs":[{"name":"y","parameters":{"binary_data":true}}]}`)
	binBody := append([]byte{}, header...)
	for _, v := range seq(32, 3) {
		binBody = binary.LittleEndian.AppendUint32(binBody, math.Float32bits(v))
	}
	hl := map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header))}
	for name, body := range map[string][]byte{"json": jsonBody, "binary": binBody} {
		h := map[string]string{}
		if name == "binary" {
			h = hl
		}
		code, want, _ := in.rawDo("POST", "/v2/models/mlp/infer", body, h)
		if code != http.StatusOK {
			t.Fatalf("%s identity: %d %s", name, code, want)
		}
		for _, c := range []httpcoding.Coding{httpcoding.Gzip, httpcoding.Deflate} {
			hc := map[string]string{"Content-Encoding": c.String()}
			for k, v := range h {
				hc[k] = v
			}
			if code, got, _ := in.rawDo("POST", "/v2/models/mlp/infer", httpcoding.Compress(c, body), hc); code != http.StatusOK || !bytes.Equal(got, want) {
				t.Errorf("%s %s body: %d %q; want 200 and the identity answer %q", name, c, code, got, want)
			}
			ha := map[string]string{"Accept-Encoding": c.String()}
			for k, v := range h {
				ha[k] = v
			}
			code, got, hdr := in.rawDo("POST", "/v2/models/mlp/infer", body, ha)
			if code != http.StatusOK || hdr.Get("Content-Encoding") != c.String() || hdr.Get("Vary") != "Accept-Encoding" ||
				!bytes.Equal(inflate(t, c, got), want) {
				t.Errorf("%s, Accept-Encoding %s: %d, Content-Encoding %q, Vary %q; want the identity answer compressed", name, c, code,
					hdr.Get("Content-Encoding"), hdr.Get("Vary"))
			}
		}
	}
	small := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	for name, tc := range map[string]struct {
		body     []byte
		encoding string
		want     int
	}{
		"gzip bomb":    {hostile.GzipBomb(small, 4<<20), "gzip", http.StatusRequestEntityTooLarge},
		"deflate bomb": {hostile.DeflateBomb(small, 4<<20), "deflate", http.StatusRequestEntityTooLarge},
		"br":           {small, "br", http.StatusUnsupportedMediaType},
		"stacked":      {httpcoding.Compress(httpcoding.Gzip, httpcoding.Compress(httpcoding.Gzip, small)), "gzip, gzip", http.StatusUnsupportedMediaType},
		"corrupt":      {small, "gzip", http.StatusBadRequest},
		"legal bomb":   {hostile.GzipBomb(small, 1<<20), "gzip", http.StatusOK}, // exactly max_body_bytes
	} {
		code, body, _ := in.rawDo("POST", "/v2/models/mlp/infer", tc.body, map[string]string{"Content-Encoding": tc.encoding})
		if code != tc.want || (code != http.StatusOK && !json.Valid(body)) {
			t.Errorf("%s: %d %s; want %d", name, code, body, tc.want)
		}
	}
	if code, body, _ := in.rawDo("POST", "/v2/models/mlp/infer", small, nil); code != http.StatusOK {
		t.Errorf("after the bombs: %d %s; want 200", code, body)
	}
}

// inflate decompresses a response body of coding c.
func inflate(t *testing.T, c httpcoding.Coding, b []byte) []byte {
	t.Helper()
	var r io.Reader
	var err error
	if c == httpcoding.Gzip {
		r, err = gzip.NewReader(bytes.NewReader(b))
	} else {
		r, err = zlib.NewReader(bytes.NewReader(b))
	}
	if err != nil {
		t.Fatalf("%s response: %v", c, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s response: %v", c, err)
	}
	return out
}
