package main

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// TestStringModel serves a string identity model (ONNX STRING, V2 BYTES)
// with batching on: its metadata and config say BYTES / TYPE_STRING, JSON
// and binary requests (and gRPC typed bytes_contents) get their strings
// back, and a binary element whose length prefix lies, or that holds a NUL
// byte ONNX Runtime cannot carry, is the client's error (400), not a crash.
func TestStringModel(t *testing.T) {
	path := writeModel(t, t.TempDir(), "strings", onnxmodel.Strings())
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		models:   map[string]string{"strings": path},
		batching: map[string]string{"strings": "{max_batch_size: 4, max_queue_delay: 1ms}"}})

	code, body, _ := in.get("/v2/models/strings")
	if code != http.StatusOK || !strings.Contains(string(body), `{"name":"text","datatype":"BYTES","shape":[-1,2]}`) {
		t.Errorf("metadata = %d %s, want input text BYTES [-1,2]", code, body)
	}
	code, body, _ = in.get("/v2/models/strings/config")
	if code != http.StatusOK || !strings.Contains(string(body), `"data_type":"TYPE_STRING"`) {
		t.Errorf("config = %d %s, want TYPE_STRING", code, body)
	}
	code, body, _ = in.post("/v2/models/strings/infer",
		[]byte(`{"inputs":[{"name":"text","datatype":"BYTES","shape":[2,2],"data":["héllo","","a\"b","monday"]}]}`), nil)
	if code != http.StatusOK || !strings.Contains(string(body), `{"name":"same","datatype":"BYTES","shape":[2,2],"data":["héllo","","a\"b","monday"]}`) {
		t.Errorf("JSON infer = %d %s, want the strings back", code, body)
	}

	elems := tensor.AppendBytesElement(tensor.AppendBytesElement(nil, []byte("ab")), []byte("\xffc"))
	code, out := postBytes(t, in, elems)
	if code != http.StatusOK || !bytes.Equal(out, elems) {
		t.Errorf("binary infer = %d %q, want the elements back as binary data %q", code, out, elems)
	}
	lying := bytes.Clone(elems)
	lying[0] = 0xff
	nul := tensor.AppendBytesElement(tensor.AppendBytesElement(nil, []byte("a\x00b")), nil)
	for name, data := range map[string][]byte{"lying length prefix": lying, "NUL byte": nul} {
		if code, out := postBytes(t, in, data); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, code, out)
		}
	}
	if code, body, _ := in.post("/v2/models/mlp/infer", mlpBody(), nil); code != http.StatusOK {
		t.Errorf("mlp after the refused requests = %d %s, want 200", code, body)
	}
	grpcStrings(t, in, elems)
}

// grpcStrings sends the string model typed bytes_contents over gRPC: the
// answer's raw_output_contents are the elements in Triton's serialisation.
func grpcStrings(t *testing.T, in *instance, elems []byte) {
	c := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "strings", Inputs: []*pb.ModelInferRequest_InferInputTensor{{
		Name: "text", Datatype: "BYTES", Shape: []int64{1, 2},
		Contents: &pb.InferTensorContents{BytesContents: [][]byte{[]byte("ab"), []byte("\xffc")}}}}})
	if err != nil || len(r.GetRawOutputContents()) != 1 || !bytes.Equal(r.GetRawOutputContents()[0], elems) ||
		r.GetOutputs()[0].GetDatatype() != "BYTES" {
		t.Errorf("gRPC ModelInfer = %v, %v; want output same BYTES with raw contents %q", r, err, elems)
	}
}

// postBytes sends one row of two BYTES elements as binary data, asking for
// the output as binary data; it returns the status and the output's bytes
// (or the error body).
func postBytes(t *testing.T, in *instance, elems []byte) (int, []byte) {
	t.Helper()
	header := `{"inputs":[{"name":"text","datatype":"BYTES","shape":[1,2],"parameters":{"binary_data_size":` +
		strconv.Itoa(len(elems)) + `}}],"outputs":[{"name":"same","parameters":{"binary_data":true}}]}`
	code, body, hdr := in.post("/v2/models/strings/infer", append([]byte(header), elems...),
		map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header))})
	n, err := strconv.Atoi(hdr.Get("Inference-Header-Content-Length"))
	if code != http.StatusOK || err != nil || n > len(body) {
		return code, body
	}
	return code, body[n:]
}

// TestStringModelManyElements: a text model's request is bounded by bytes
// (max_body_bytes), not by a fixed element count. 100,000 strings (over
// the 65,536 that used to be the cap) are served; a request declaring
// more elements than max_body_bytes pays for (at v2.BytesElementCost
// each once split) is refused 413 with a message naming max_body_bytes.
func TestStringModelManyElements(t *testing.T) {
	path := writeModel(t, t.TempDir(), "strings", onnxmodel.Strings())
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}, maxBodyBytes: "8MiB",
		models: map[string]string{"strings": path}})
	const rows = 50_000
	code, body, _ := in.post("/v2/models/strings/infer", stringRows(rows), nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"shape":[50000,2]`) {
		t.Fatalf("%d strings = %d %.300s, want them served", 2*rows, code, body)
	}
	bound := (8 << 20) / v2.BytesElementCost // 116508 elements
	code, body, _ = in.post("/v2/models/strings/infer", stringRows(bound/2+1), nil)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "max_body_bytes allows") {
		t.Fatalf("%d strings = %d %.300s, want 413 naming max_body_bytes", bound+2, code, body)
	}
}

// stringRows is a JSON request of rows x 2 one-letter strings.
func stringRows(rows int) []byte {
	b := []byte(`{"inputs":[{"name":"text","datatype":"BYTES","shape":[` + strconv.Itoa(rows) + `,2],"data":[`)
	for i := range 2 * rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `"a"`...)
	}
	return append(b, "]}]}"...)
}
