package v2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// v2Response is the response shape, read with encoding/json to check that
// the encoder writes valid JSON with the right fields.
type v2Response struct {
	ModelName    string `json:"model_name"`
	ModelVersion string `json:"model_version"`
	ID           string `json:"id"`
	Outputs      []struct {
		Name       string          `json:"name"`
		Datatype   string          `json:"datatype"`
		Shape      []int64         `json:"shape"`
		Data       json.RawMessage `json:"data"`
		Parameters struct {
			BinaryDataSize *int `json:"binary_data_size"`
		} `json:"parameters"`
	} `json:"outputs"`
}

func parseResponse(t *testing.T, b []byte) v2Response {
	t.Helper()
	var r v2Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("response is not valid JSON: %v\n%s", err, clipTest(string(b)))
	}
	return r
}

// randomData returns n random values of dt as JSON literals, with the
// extremes of integer types included.
func randomData(r *rand.Rand, dt tensor.DType, n int) []string {
	out := make([]string, n)
	for i := range out {
		switch dt {
		case tensor.Bool:
			out[i] = strconv.FormatBool(r.IntN(2) == 1)
		case tensor.FP32, tensor.FP16, tensor.BF16:
			out[i] = strconv.FormatFloat(float64(math.Float32frombits(r.Uint32()&0xbfffffff)), 'g', -1, 32)
		case tensor.FP64:
			out[i] = strconv.FormatFloat(math.Float64frombits(r.Uint64()&0xbfefffffffffffff), 'g', -1, 64)
		case tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64:
			lo, hi := signedRange(dt.Size())
			switch i {
			case 0:
				out[i] = strconv.FormatInt(lo, 10)
			case 1:
				out[i] = strconv.FormatInt(hi, 10)
			default:
				out[i] = strconv.FormatInt(int64(r.Uint64())>>(64-8*dt.Size()), 10)
			}
		default:
			hi := uint64(math.MaxUint64) >> (64 - 8*dt.Size())
			if i == 0 {
				out[i] = strconv.FormatUint(hi, 10)
			} else {
				out[i] = strconv.FormatUint(r.Uint64()&hi, 10)
			}
		}
	}
	return out
}

// TestRoundTrip decodes a request of every dtype, encodes the tensors as a
// response, turns each response output back into a request input and
// decodes it again: the bytes must survive unchanged, JSON and binary.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for dt := tensor.Bool; dt <= tensor.BF16; dt++ {
		for _, binary := range []bool{false, true} {
			vals := randomData(r, dt, 12)
			body := request(fmt.Sprintf(`"name":"t","shape":[3,4],"datatype":"%s","data":[%s]`, dt, strings.Join(vals, ",")))
			first := mustDecode(t, body)
			req := &InferRequest{ID: "rt", BinaryOutputs: binary}
			out, headerLen := AppendInferResponse(nil, "m", req, first.Inputs)
			if !binary && headerLen != -1 {
				t.Fatalf("%s: headerLen %d for a JSON-only response", dt, headerLen)
			}
			if binary && headerLen != len(out)-len(first.Inputs[0].Data) {
				t.Fatalf("%s: headerLen %d, body %d, data %d", dt, headerLen, len(out), len(first.Inputs[0].Data))
			}
			var second *InferRequest
			if binary {
				second = reencodeBinary(t, out, headerLen)
			} else {
				second = reencodeJSON(t, out)
			}
			a, b := first.Inputs[0], second.Inputs[0]
			if !bytes.Equal(a.Data, b.Data) || a.DType != b.DType || fmt.Sprint(a.Shape) != fmt.Sprint(b.Shape) {
				t.Errorf("%s (binary %v): round trip changed %x to %x", dt, binary, a.Data, b.Data)
			}
		}
	}
}

func reencodeJSON(t *testing.T, out []byte) *InferRequest {
	t.Helper()
	resp := parseResponse(t, out)
	o := resp.Outputs[0]
	body := request(fmt.Sprintf(`"name":%q,"shape":%s,"datatype":%q,"data":%s`, o.Name, tensor.FormatShape(o.Shape), o.Datatype, o.Data))
	return mustDecode(t, body)
}

func reencodeBinary(t *testing.T, out []byte, headerLen int) *InferRequest {
	t.Helper()
	resp := parseResponse(t, out[:headerLen])
	o := resp.Outputs[0]
	if o.Parameters.BinaryDataSize == nil || o.Data != nil {
		t.Fatalf("binary output entry has no binary_data_size or has data: %s", out[:headerLen])
	}
	header := request(fmt.Sprintf(`"name":%q,"shape":%s,"datatype":%q,"parameters":{"binary_data_size":%d}`,
		o.Name, tensor.FormatShape(o.Shape), o.Datatype, *o.Parameters.BinaryDataSize))
	r, err := DecodeInferRequest(append([]byte(header), out[headerLen:]...), len(header))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResponseMixedBinary(t *testing.T) {
	outputs := []tensor.Tensor{
		{Name: "a", DType: tensor.FP32, Shape: []int64{2}, Data: f32Bytes(1.5, -2)},
		{Name: "b", DType: tensor.Int8, Shape: []int64{3}, Data: []byte{1, 0xff, 3}},
		{Name: "c", DType: tensor.Uint16, Shape: []int64{1, 2}, Data: le(uint16(7), uint16(65535))},
		{Name: "skipped", DType: tensor.FP32, Shape: []int64{1}, Data: f32Bytes(9)},
	}
	req := &InferRequest{ID: "q\"1", Outputs: []RequestedOutput{{Name: "c", Binary: true}, {Name: "b"}, {Name: "a", Binary: true}}}
	dst := []byte("PREFIX")
	out, headerLen := AppendInferResponse(dst, "my-model", req, outputs)
	if !bytes.HasPrefix(out, []byte("PREFIX")) {
		t.Fatal("dst was not appended to")
	}
	out = out[len("PREFIX"):]
	want := `{"model_name":"my-model","model_version":"1","id":"q\"1","outputs":[` +
		`{"name":"a","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}},` +
		`{"name":"b","datatype":"INT8","shape":[3],"data":[1,-1,3]},` +
		`{"name":"c","datatype":"UINT16","shape":[1,2],"parameters":{"binary_data_size":4}}]}`
	if headerLen != len(want) || string(out[:headerLen]) != want {
		t.Fatalf("header (%d bytes):\n%s\nwant (%d bytes):\n%s", headerLen, out[:headerLen], len(want), want)
	}
	// Binary data follows the header in the order of the entries: a, then c.
	if bin := out[headerLen:]; !bytes.Equal(bin, append(f32Bytes(1.5, -2), le(uint16(7), uint16(65535))...)) {
		t.Errorf("binary section = %x", bin)
	}
}

func TestResponseJSONValues(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	outputs := []tensor.Tensor{
		{Name: "f", DType: tensor.FP32, Shape: []int64{5}, Data: f32Bytes(0.1, 1e-7, nan, inf, -inf)},
		{Name: "d", DType: tensor.FP64, Shape: []int64{2}, Data: le(0.1, math.NaN())},
		{Name: "h", DType: tensor.FP16, Shape: []int64{3}, Data: le(uint16(0x3555), uint16(0x7c00), uint16(0x0001))},
		{Name: "bf", DType: tensor.BF16, Shape: []int64{1}, Data: le(uint16(0x3dcd))},
		{Name: "b", DType: tensor.Bool, Shape: []int64{2}, Data: []byte{0, 2}},
		{Name: "u", DType: tensor.Uint64, Shape: []int64{1}, Data: le(uint64(math.MaxUint64))},
		{Name: "i", DType: tensor.Int64, Shape: []int64{1}, Data: le(int64(math.MinInt64))},
	}
	out, headerLen := AppendInferResponse(nil, "m", nil, outputs)
	if headerLen != -1 {
		t.Errorf("headerLen = %d, want -1", headerLen)
	}
	resp := parseResponse(t, out)
	want := []string{
		`[0.1,1e-07,null,null,null]`,
		`[0.1,null]`,
		`[0.33325195,null,5.9604645e-08]`,
		`[0.100097656]`,
		`[false,true]`,
		`[18446744073709551615]`,
		`[-9223372036854775808]`,
	}
	for i, w := range want {
		if got := string(resp.Outputs[i].Data); got != w {
			t.Errorf("output %s data = %s, want %s", resp.Outputs[i].Name, got, w)
		}
	}
	if resp.ID != "" || bytes.Contains(out, []byte(`"id"`)) {
		t.Errorf("id written for a request without one: %s", out)
	}
}

func TestAppendModelMetadata(t *testing.T) {
	md := &tensor.Metadata{
		Name:     "resnet50",
		Platform: "onnxruntime_onnx",
		Inputs:   []tensor.Spec{{Name: "input", DType: tensor.FP32, Shape: []int64{-1, 3, 224, 224}}},
		Outputs:  []tensor.Spec{{Name: "output", DType: tensor.FP32, Shape: []int64{-1, 1000}}, {Name: "aux", DType: tensor.Int64, Shape: []int64{}}},
	}
	got := string(AppendModelMetadata(nil, md))
	want := `{"name":"resnet50","versions":["1"],"platform":"onnxruntime_onnx",` +
		`"inputs":[{"name":"input","datatype":"FP32","shape":[-1,3,224,224]}],` +
		`"outputs":[{"name":"output","datatype":"FP32","shape":[-1,1000]},{"name":"aux","datatype":"INT64","shape":[]}]}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// It must read back as the same metadata through the JSON tags.
	var back tensor.Metadata
	if err := json.Unmarshal([]byte(got), &back); err != nil || fmt.Sprint(back) != fmt.Sprint(*md) {
		t.Errorf("read back %+v, %v", back, err)
	}
	md.Identity = "sha256:ab12"
	if got := string(AppendModelMetadata(nil, md)); got != strings.TrimSuffix(want, "}")+`,"parameters":{"model_identity":"sha256:ab12"}}` {
		t.Errorf("with an identity: %s", got)
	}
}

func TestAppendServerMetadataAndError(t *testing.T) {
	got := string(AppendServerMetadata(nil, "supervisor", "0.1.0"))
	if want := `{"name":"supervisor","version":"0.1.0","extensions":["binary_tensor_data","classification","logging","model_configuration","model_repository","schedule_policy","statistics","system_shared_memory"]}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, msg := range []string{"plain", `input "x": bad`, "tab\tnew\nline\r\x00\x1f", "back\\slash", "é ünïcode ✓", "bad utf8 \xff\xfe", "js \u2028\u2029"} {
		b := AppendError(nil, msg)
		var v struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("AppendError(%q) = %s: %v", msg, b, err)
		}
		want := strings.ToValidUTF8(msg, "\ufffd")
		if msg == "bad utf8 \xff\xfe" {
			want = "bad utf8 \ufffd\ufffd"
		}
		if v.Error != want {
			t.Errorf("AppendError(%q) reads back as %q", msg, v.Error)
		}
	}
}
