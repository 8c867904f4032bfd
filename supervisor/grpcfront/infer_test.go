package grpcfront

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// The request a ModelInferRequest becomes is one the prep workers'
// decoder (internal/v2) reads back to the same tensors, typed contents
// packed as raw ones would be.
func TestEncodeInferRequestDecodes(t *testing.T) {
	r := &pb.ModelInferRequest{ModelName: "m", Id: "id-1",
		Parameters: map[string]*pb.InferParameter{
			"priority":           {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: 2}},
			"binary_data_output": {ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: false}},
		},
		Inputs: []*pb.ModelInferRequest_InferInputTensor{
			{Name: "f", Datatype: "FP32", Shape: []int64{2}, Contents: &pb.InferTensorContents{Fp32Contents: []float32{1.5, -2}}},
			{Name: "i8", Datatype: "INT8", Shape: []int64{3}, Contents: &pb.InferTensorContents{IntContents: []int32{-128, 0, 127}}},
			{Name: "u16", Datatype: "UINT16", Shape: []int64{1}, Contents: &pb.InferTensorContents{UintContents: []uint32{65535}}},
			{Name: "s", Datatype: "BYTES", Shape: []int64{2}, Contents: &pb.InferTensorContents{BytesContents: [][]byte{[]byte("ab"), {}}}},
			{Name: "b", Datatype: "BOOL", Shape: []int64{2}, Contents: &pb.InferTensorContents{BoolContents: []bool{true, false}}},
		},
		Outputs: []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "y"}},
	}
	body, headerLen, err := encodeInferRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	req, err := v2.DecodeInferRequest(body, headerLen)
	if err != nil {
		t.Fatalf("the prep workers' decoder refuses it: %v\n%s", err, body[:headerLen])
	}
	want := [][]byte{
		{0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0},
		{0x80, 0, 0x7f},
		{0xff, 0xff},
		{2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0},
		{1, 0},
	}
	for i, w := range want {
		if !bytes.Equal(req.Inputs[i].Data, w) {
			t.Errorf("input %s: %x, want %x", req.Inputs[i].Name, req.Inputs[i].Data, w)
		}
	}
	if req.ID != "id-1" || req.Priority != 2 || !req.BinaryOutputs || len(req.Outputs) != 1 || !req.Outputs[0].Binary {
		t.Errorf("decoded %+v", req)
	}
}

func TestEncodeInferRequestRefuses(t *testing.T) {
	in := func(dt string, c *pb.InferTensorContents) []*pb.ModelInferRequest_InferInputTensor {
		return []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: dt, Shape: []int64{1}, Contents: c}}
	}
	for name, r := range map[string]*pb.ModelInferRequest{
		"raw count":          {Inputs: in("FP32", nil), RawInputContents: [][]byte{{1}, {2}}},
		"raw and contents":   {Inputs: in("FP32", &pb.InferTensorContents{}), RawInputContents: [][]byte{{1}}},
		"INT8 out of range":  {Inputs: in("INT8", &pb.InferTensorContents{IntContents: []int32{128}})},
		"UINT8 out of range": {Inputs: in("UINT8", &pb.InferTensorContents{UintContents: []uint32{256}})},
		"FP16 typed":         {Inputs: in("FP16", &pb.InferTensorContents{})},
		"unknown datatype":   {Inputs: in("FP8", &pb.InferTensorContents{})},
	} {
		if _, _, err := encodeInferRequest(r); status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() == "" {
			t.Errorf("%s: %v, want INVALID_ARGUMENT with a message", name, err)
		}
	}
}

// A binary answer as the prep workers write it (internal/v2) becomes raw
// outputs, in order, with the parameters carried over.
func TestDecodeInferResponse(t *testing.T) {
	h := `{"model_name":"m","model_version":"1","id":"q","parameters":{"n":3,"big":18446744073709551615,"f":0.5,"s":"x","o":{}},"outputs":[` +
		`{"name":"a","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}},` +
		`{"name":"b","datatype":"BYTES","shape":[],"parameters":{"binary_data_size":5,"classification":true}}]}`
	body := append([]byte(h), 1, 2, 3, 4, 1, 0, 0, 0, 'z')
	r, err := decodeInferResponse(body, []byte(strconv.Itoa(len(h))))
	if err != nil {
		t.Fatal(err)
	}
	if r.ModelName != "m" || r.Id != "q" || len(r.Outputs) != 2 || r.Outputs[1].Name != "b" || r.Outputs[1].Shape == nil ||
		!bytes.Equal(r.RawOutputContents[0], []byte{1, 2, 3, 4}) || !bytes.Equal(r.RawOutputContents[1], []byte{1, 0, 0, 0, 'z'}) {
		t.Fatalf("decoded %v", r)
	}
	p := r.Parameters
	if p["n"].GetInt64Param() != 3 || p["big"].GetUint64Param() != math.MaxUint64 || p["f"].GetDoubleParam() != 0.5 || p["s"].GetStringParam() != "x" || p["o"] != nil {
		t.Errorf("parameters %v", p)
	}
	if _, ok := r.Outputs[1].Parameters["binary_data_size"]; ok || !r.Outputs[1].Parameters["classification"].GetBoolParam() {
		t.Errorf("output parameters %v", r.Outputs[1].Parameters)
	}
}

func TestDecodeInferResponseRefuses(t *testing.T) {
	h := []byte(`{"outputs":[{"name":"a","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":8}}]}`)
	const notBinary = `{"outputs":[{"name":"a","data":[1]}]}`
	for name, tc := range map[string]struct {
		body   []byte
		length string
	}{
		"no header length":  {h, ""},
		"length past body":  {h, strconv.Itoa(len(h) + 1)},
		"size past body":    {append(h, 1, 2, 3, 4), strconv.Itoa(len(h))},
		"not JSON":          {[]byte("nope"), "4"},
		"output not binary": {[]byte(notBinary), strconv.Itoa(len(notBinary))},
	} {
		if _, err := decodeInferResponse(tc.body, []byte(tc.length)); status.Code(err) != codes.Internal {
			t.Errorf("%s: %v, want INTERNAL", name, err)
		}
	}
}

// TestEncodeInferRequestHeaderIsJSON: the hand-written header is valid
// JSON with every string escaped, the parameters the binary extension
// owns overridden, a NaN double left out, and the same bytes for the
// same request (parameters in key order).
func TestEncodeInferRequestHeaderIsJSON(t *testing.T) {
	p := func(v any) *pb.InferParameter {
		switch v := v.(type) {
		case string:
			return &pb.InferParameter{ParameterChoice: &pb.InferParameter_StringParam{StringParam: v}}
		case float64:
			return &pb.InferParameter{ParameterChoice: &pb.InferParameter_DoubleParam{DoubleParam: v}}
		case uint64:
			return &pb.InferParameter{ParameterChoice: &pb.InferParameter_Uint64Param{Uint64Param: v}}
		case bool:
			return &pb.InferParameter{ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: v}}
		}
		return nil
	}
	r := &pb.ModelInferRequest{Id: "a\"b\\c\n\x01\xff",
		Parameters: map[string]*pb.InferParameter{"z": p("q\""), "a": p(1e300), "nan": p(math.NaN()), "u": p(uint64(math.MaxUint64)), "none": {}},
		Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x\"", Datatype: "UINT8", Shape: []int64{2, 1},
			Parameters: map[string]*pb.InferParameter{"binary_data_size": p(uint64(99)), "k": p(true)}}},
		Outputs:          []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "y", Parameters: map[string]*pb.InferParameter{"binary_data": p(false)}}},
		RawInputContents: [][]byte{{7, 8}},
	}
	body, n, err := encodeInferRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(body[:n], &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, body[:n])
	}
	want := map[string]any{"id": "a\"b\\c\n\x01\ufffd",
		"parameters": map[string]any{"z": "q\"", "a": 1e300, "u": float64(math.MaxUint64), "binary_data_output": true},
		"inputs":     []any{map[string]any{"name": "x\"", "datatype": "UINT8", "shape": []any{2.0, 1.0}, "parameters": map[string]any{"k": true, "binary_data_size": 2.0}}},
		"outputs":    []any{map[string]any{"name": "y", "parameters": map[string]any{"binary_data": true}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("header %s\ndecodes to %v\nwant       %v", body[:n], got, want)
	}
	if !bytes.Equal(body[n:], []byte{7, 8}) {
		t.Errorf("tensor bytes %x", body[n:])
	}
	for range 10 {
		again, _, _ := encodeInferRequest(r)
		if !bytes.Equal(again, body) {
			t.Fatalf("the same request encoded twice differs:\n%s\n%s", body, again)
		}
	}
}

// BenchmarkEncodeInferRequest: the default model's request (one FP32
// input of 1x3x224x224, 602,112 bytes) turned into the body the prep
// workers take.
func BenchmarkEncodeInferRequest(b *testing.B) {
	r := &pb.ModelInferRequest{ModelName: "default",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "data", Datatype: "FP32", Shape: []int64{1, 3, 224, 224}}},
		RawInputContents: [][]byte{make([]byte, 3*224*224*4)}}
	b.SetBytes(3 * 224 * 224 * 4)
	for b.Loop() {
		if _, _, err := encodeInferRequest(r); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEncodeInferRequestRegions: an input in a shared memory region
// keeps its region parameters and takes no raw_input_contents entry (one
// per input not in a region, in order, as tritonclient sends them), so
// the master (supervisor/sysshm) reads its bytes; an output in a region
// keeps its parameters too.
func TestEncodeInferRequestRegions(t *testing.T) {
	region := map[string]*pb.InferParameter{
		"shared_memory_region":    {ParameterChoice: &pb.InferParameter_StringParam{StringParam: "r0"}},
		"shared_memory_byte_size": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: 8}},
	}
	ins := []*pb.ModelInferRequest_InferInputTensor{
		{Name: "a", Datatype: "UINT8", Shape: []int64{2}},
		{Name: "r", Datatype: "FP32", Shape: []int64{2}, Parameters: region},
		{Name: "b", Datatype: "UINT8", Shape: []int64{3}},
	}
	r := &pb.ModelInferRequest{ModelName: "m", Inputs: ins, RawInputContents: [][]byte{{1, 2}, {3, 4, 5}},
		Outputs: []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "y", Parameters: region}}}
	body, headerLen, err := encodeInferRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Inputs []struct {
			Name       string
			Parameters map[string]any
		}
		Outputs []struct{ Parameters map[string]any }
	}
	if err := json.Unmarshal(body[:headerLen], &h); err != nil {
		t.Fatalf("%v: %s", err, body[:headerLen])
	}
	if string(body[headerLen:]) != "\x01\x02\x03\x04\x05" ||
		h.Inputs[0].Parameters["binary_data_size"] != float64(2) || h.Inputs[2].Parameters["binary_data_size"] != float64(3) ||
		h.Inputs[1].Parameters["shared_memory_region"] != "r0" || h.Inputs[1].Parameters["binary_data_size"] != nil ||
		h.Outputs[0].Parameters["shared_memory_region"] != "r0" {
		t.Fatalf("header %s, binary %x", body[:headerLen], body[headerLen:])
	}
	r.RawInputContents = [][]byte{{1, 2}, {9}, {3, 4, 5}}
	if _, _, err := encodeInferRequest(r); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "for 2 inputs not in shared memory") {
		t.Errorf("a raw entry for the region input too: %v", err)
	}
	r.RawInputContents = nil
	ins[1].Contents = &pb.InferTensorContents{Fp32Contents: []float32{1, 2}}
	ins[0].Contents = &pb.InferTensorContents{UintContents: []uint32{1, 2}}
	ins[2].Contents = &pb.InferTensorContents{UintContents: []uint32{3, 4, 5}}
	if _, _, err := encodeInferRequest(r); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "names a shared memory region and has contents") {
		t.Errorf("contents on the region input: %v", err)
	}
}

// recordingPool is a mem.BufferPool that records what it gives and
// takes back.
type recordingPool struct{ got, put []*[]byte }

func (p *recordingPool) Get(n int) *[]byte {
	b := make([]byte, n)
	p.got = append(p.got, &b)
	return &b
}

func (p *recordingPool) Put(b *[]byte) { p.put = append(p.put, b) }

// TestEncodePooledReusesItsBuffer: ModelInfer's body is encoded into a
// buffer of its pool (bodyPool), the same bytes as one encoded fresh,
// and that buffer goes back when the body is freed, once sent (before
// issue 33 each RPC allocated its body: 600 KB for the default model).
// A header longer than its estimate grows the body out of the buffer,
// which goes back at once.
func TestEncodePooledReusesItsBuffer(t *testing.T) {
	r := &pb.ModelInferRequest{ModelName: "default", Id: "b",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "data", Datatype: "FP32", Shape: []int64{1, 3, 224, 224}}},
		RawInputContents: [][]byte{bytes.Repeat([]byte{1}, 3*224*224*4)}}
	want, _, err := encodeInferRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	pool := &recordingPool{}
	body, _, free, err := encodePooled(r, pool)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, want) {
		t.Fatalf("the pooled body differs from one encoded fresh (%d bytes against %d)", len(body), len(want))
	}
	if len(pool.got) != 1 || &(*pool.got[0])[0] != &body[0] {
		t.Fatalf("the body is not in the pool's buffer (%d buffers taken)", len(pool.got))
	}
	if len(pool.put) != 0 {
		t.Fatal("the buffer went back before the body was freed")
	}
	free()
	if len(pool.put) != 1 || pool.put[0] != pool.got[0] {
		t.Fatalf("free gave back %d buffers; want the one taken", len(pool.put))
	}

	long := strings.Repeat("p", 4096) // far past headerEstimate's share for a parameter
	r.Parameters = map[string]*pb.InferParameter{"k": {ParameterChoice: &pb.InferParameter_StringParam{StringParam: long}}}
	want, _, _ = encodeInferRequest(r)
	pool = &recordingPool{}
	body, _, free, _ = encodePooled(r, pool)
	if !bytes.Equal(body, want) || len(pool.put) != 1 || pool.put[0] != pool.got[0] {
		t.Fatalf("a grown body: equal %v, %d of %d buffers back before free; want equal, the one back", bytes.Equal(body, want), len(pool.put), len(pool.got))
	}
	free()
	if len(pool.put) != 1 {
		t.Fatalf("free gave back a buffer the grown body had left")
	}
}
