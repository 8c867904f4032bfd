package conformance

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// tensorProto encodes a TensorProto the ways ONNX writers do: dims
// unpacked, typed data packed.
func tensorProto(name string, dtype uint64, dims []int64, fields ...[]byte) []byte {
	var b []byte
	for _, d := range dims {
		b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), uint64(d))
	}
	b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.VarintType), dtype)
	b = protowire.AppendBytes(protowire.AppendTag(b, 8, protowire.BytesType), []byte(name))
	for _, f := range fields {
		b = append(b, f...)
	}
	return b
}

func packedVarints(num protowire.Number, vs ...int64) []byte {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, uint64(v))
	}
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), p)
}

func stringData(strs ...string) []byte {
	var b []byte
	for _, s := range strs {
		b = protowire.AppendBytes(protowire.AppendTag(b, 6, protowire.BytesType), []byte(s))
	}
	return b
}

func TestDecodeTensor(t *testing.T) {
	raw := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))
	raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(-2))
	cases := []struct {
		name  string
		proto []byte
		want  tensor.Tensor
	}{
		{"raw float", tensorProto("x", 1, []int64{2}, protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), raw)),
			tensor.Tensor{Name: "x", DType: tensor.FP32, Shape: []int64{2}, Data: raw}},
		{"int64_data", tensorProto("i", 7, []int64{1, 2}, packedVarints(7, -1, 3)),
			tensor.Tensor{Name: "i", DType: tensor.Int64, Shape: []int64{1, 2},
				Data: binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, math.MaxUint64), 3)}},
		{"int32_data as bool", tensorProto("b", 9, []int64{3}, packedVarints(5, 1, 0, 1)),
			tensor.Tensor{Name: "b", DType: tensor.Bool, Shape: []int64{3}, Data: []byte{1, 0, 1}}},
		{"scalar", tensorProto("s", 6, nil, packedVarints(5, -7)),
			tensor.Tensor{Name: "s", DType: tensor.Int32, Shape: []int64{}, Data: []byte{0xf9, 0xff, 0xff, 0xff}}},
		{"string_data", tensorProto("s", 8, []int64{2}, stringData("héllo", "")),
			tensor.Tensor{Name: "s", DType: tensor.Bytes, Shape: []int64{2},
				Data: tensor.AppendBytesElement(tensor.AppendBytesElement(nil, []byte("héllo")), nil)}},
		{"empty", tensorProto("e", 1, []int64{0, 3}),
			tensor.Tensor{Name: "e", DType: tensor.FP32, Shape: []int64{0, 3}, Data: []byte{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeTensor(c.proto)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != c.want.Name || got.DType != c.want.DType || !slices.Equal(got.Shape, c.want.Shape) ||
				!slices.Equal(got.Data, c.want.Data) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
	if _, err := DecodeTensor(tensorProto("s", 8, []int64{2}, stringData("a"))); err == nil {
		t.Error("a STRING tensor with one string for shape [2] decoded")
	}
	if _, err := DecodeTensor(tensorProto("c", 14, []int64{1})); !errors.Is(err, ErrUnsupported) {
		t.Errorf("COMPLEX64 tensor: %v, want ErrUnsupported", err)
	}
	if _, err := DecodeTensor(tensorProto("x", 1, []int64{3}, packedVarints(5, 1))); err == nil {
		t.Error("a tensor with too little data decoded")
	}
}

func TestCompareTolerance(t *testing.T) {
	f32 := func(vs ...float32) tensor.Tensor {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return tensor.Tensor{Name: "y", DType: tensor.FP32, Shape: []int64{int64(len(vs))}, Data: b}
	}
	nan := float32(math.NaN())
	if err := Compare(f32(1.0005, nan), f32(1, nan)); err != nil {
		t.Errorf("within rtol, NaN = NaN: %v", err)
	}
	if err := Compare(f32(1.01), f32(1)); err == nil || !strings.Contains(err.Error(), "element 0") {
		t.Errorf("1.01 vs 1: %v, want a mismatch at element 0", err)
	}
	if err := Compare(f32(1, 2), tensor.Tensor{Name: "y", DType: tensor.FP32, Shape: []int64{1, 2}, Data: f32(1, 2).Data}); err == nil {
		t.Error("shapes [2] and [1,2] compared equal")
	}
}

// TestWarmupJSON: a warm-up file decodes, through the server's own V2
// decoder, to the tensors it was written from.
func TestWarmupJSON(t *testing.T) {
	in := []tensor.Tensor{
		{Name: "i", DType: tensor.Int16, Shape: []int64{2}, Data: []byte{0xfe, 0xff, 5, 0}},
		{Name: "f", DType: tensor.FP32, Shape: []int64{}, Data: binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.1))},
		{Name: "b", DType: tensor.Bool, Shape: []int64{1}, Data: []byte{1}},
		{Name: "s", DType: tensor.Bytes, Shape: []int64{2}, Data: tensor.AppendBytesElement(tensor.AppendBytesElement(nil, []byte(`a"é`)), nil)},
	}
	b, err := WarmupJSON(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"inputs":[{"name":"i","datatype":"INT16","shape":[2],"data":[-2,5]},{"name":"f","datatype":"FP32","shape":[],"data":[0.1]},{"name":"b","datatype":"BOOL","shape":[1],"data":[true]},{"name":"s","datatype":"BYTES","shape":[2],"data":["a\"é",""]}]}`
	if string(b) != want {
		t.Errorf("WarmupJSON =\n%s\nwant\n%s", b, want)
	}
	req, err := v2.DecodeInferRequest(b, -1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if got := req.Inputs[i]; !slices.Equal(got.Data, in[i].Data) || !slices.Equal(got.Shape, in[i].Shape) {
			t.Errorf("input %q decodes to %v %v, want %v %v", in[i].Name, got.Shape, got.Data, in[i].Shape, in[i].Data)
		}
	}
}

// TestBF16TestDataRelabelled: ONNX 1.12 stores BFLOAT16 test data as
// UINT16; the runner relabels it when the model file declares BFLOAT16.
func TestBF16TestDataRelabelled(t *testing.T) {
	model := "/usr/share/libonnx-testdata/data/node/test_cast_BFLOAT16_to_FLOAT"
	in, err := ReadTensor(model + "/test_data_set_0/input_0.pb")
	if err != nil {
		t.Skipf("no libonnx-testdata (scripts/conformance installs it): %v", err)
	}
	if in.DType != tensor.Uint16 {
		t.Fatalf("test data is %s; this test expects ONNX 1.12's UINT16", in.DType)
	}
	asDeclared(&in, modelInputTypes(model+"/model.onnx"))
	if in.DType != tensor.BF16 {
		t.Errorf("relabelled to %s, want BF16", in.DType)
	}
	f := tensor.Tensor{Name: "input", DType: tensor.Uint16}
	asDeclared(&f, map[string]tensor.DType{"input": tensor.Uint16})
	if f.DType != tensor.Uint16 {
		t.Errorf("a UINT16 input was relabelled to %s", f.DType)
	}
}
