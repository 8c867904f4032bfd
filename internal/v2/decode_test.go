package v2

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// le packs values of any fixed-size type little-endian.
func le(vs ...any) []byte {
	var b bytes.Buffer
	for _, v := range vs {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

// request wraps one input's JSON fields in a request body.
func request(input string) string { return `{"inputs":[{` + input + `}]}` }

func TestDecodeEveryDType(t *testing.T) {
	cases := []struct {
		dtype string
		data  string // for shape [2,2]
		want  []byte
	}{
		{"BOOL", "true,false,false,true", []byte{1, 0, 0, 1}},
		{"UINT8", "0,1,254,255", []byte{0, 1, 254, 255}},
		{"UINT16", "0,1,65534,65535", le(uint16(0), uint16(1), uint16(65534), uint16(65535))},
		{"UINT32", "0,7,4294967294,4294967295", le(uint32(0), uint32(7), uint32(4294967294), uint32(4294967295))},
		{"UINT64", "0,-0,9223372036854775808,18446744073709551615", le(uint64(0), uint64(0), uint64(1<<63), uint64(math.MaxUint64))},
		{"INT8", "-128,-1,0,127", le(int8(-128), int8(-1), int8(0), int8(127))},
		{"INT16", "-32768,-2,3,32767", le(int16(-32768), int16(-2), int16(3), int16(32767))},
		{"INT32", "-2147483648,-5,5,2147483647", le(int32(math.MinInt32), int32(-5), int32(5), int32(math.MaxInt32))},
		{"INT64", "-9223372036854775808,-1,1,9223372036854775807", le(int64(math.MinInt64), int64(-1), int64(1), int64(math.MaxInt64))},
		{"FP32", "0.1,-2.5e3,3.4028235e38,1e-45", le(float32(0.1), float32(-2500), float32(math.MaxFloat32), float32(1e-45))},
		{"FP64", "0.1,-2.5e3,1.7976931348623157e308,5e-324", le(0.1, -2500.0, math.MaxFloat64, 5e-324)},
		// FP16: 0.1 rounds to 0x2e66; 65520 overflows to Inf; 6e-8 is the
		// smallest subnormal; 1.00048828125 is a tie that goes to even 1.
		{"FP16", "0.1,65520,6e-8,1.00048828125", le(uint16(0x2e66), uint16(0x7c00), uint16(0x0001), uint16(0x3c00))},
		// BF16: 1.00390625 is a tie between 1 and 1+2^-7 (to even 1);
		// 1.01171875 a tie between odd and even (up); 1e39 overflows.
		{"BF16", "0.1,1.00390625,1.01171875,1e39", le(uint16(0x3dcd), uint16(0x3f80), uint16(0x3f82), uint16(0x7f80))},
	}
	for _, c := range cases {
		parts := strings.Split(c.data, ",")
		nested := "[" + parts[0] + "," + parts[1] + "],[" + parts[2] + "," + parts[3] + "]"
		for _, data := range []string{c.data, nested, " " + strings.ReplaceAll(nested, ",", " ,\n ") + " "} {
			body := request(`"name":"x","shape":[2,2],"datatype":"` + c.dtype + `","data":[` + data + `]`)
			r := mustDecode(t, body)
			in := r.Inputs[0]
			if in.Name != "x" || in.DType.String() != c.dtype || tensor.FormatShape(in.Shape) != "[2,2]" {
				t.Errorf("%s: decoded %q %s %v", c.dtype, in.Name, in.DType, in.Shape)
			}
			if !bytes.Equal(in.Data, c.want) {
				t.Errorf("%s data [%s]: bytes %x, want %x", c.dtype, data, in.Data, c.want)
			}
			if err := in.Check(); err != nil {
				t.Error(err)
			}
		}
	}
}

func TestDecodeRequestFields(t *testing.T) {
	body := `{
		"id": "req-\u00e9\n1",
		"extension_field": {"deep": [1, {"x": null}], "s": "\"}"},
		"parameters": {"binary_data_output": true, "timeout": 1500, "priority": 2, "custom": "x"},
		"inputs": [{"parameters": {"other": 1}, "data": [1, 2, 3], "datatype": "INT32", "shape": [3], "name": "a"},
		           {"name": "b", "datatype": "FP32", "shape": [1], "data": [null]}],
		"outputs": [{"name": "y", "parameters": {"binary_data": false}}, {"name": "z"}]
	}`
	r := mustDecode(t, body)
	if r.ID != "req-é\n1" {
		t.Errorf("ID = %q", r.ID)
	}
	if !r.BinaryOutputs || r.Timeout != 1500*time.Microsecond || r.Priority != 2 {
		t.Errorf("parameters: binary %v timeout %v priority %d", r.BinaryOutputs, r.Timeout, r.Priority)
	}
	want := []RequestedOutput{{Name: "y"}, {Name: "z", Binary: true}} // z inherits binary_data_output
	if fmt.Sprint(r.Outputs) != fmt.Sprint(want) {
		t.Errorf("Outputs = %v, want %v", r.Outputs, want)
	}
	if len(r.Inputs) != 2 || !bytes.Equal(r.Inputs[0].Data, le(int32(1), int32(2), int32(3))) {
		t.Fatalf("inputs = %+v", r.Inputs)
	}
	if v := math.Float32frombits(binary.LittleEndian.Uint32(r.Inputs[1].Data)); !math.IsNaN(float64(v)) {
		t.Errorf("null decoded to %v, want NaN", v)
	}
}

func TestDecodeScalarAndEmpty(t *testing.T) {
	r := mustDecode(t, request(`"name":"s","shape":[],"datatype":"INT64","data":[42]`))
	if !bytes.Equal(r.Inputs[0].Data, le(int64(42))) {
		t.Errorf("scalar: %x", r.Inputs[0].Data)
	}
	for _, in := range []string{
		`"name":"e","shape":[0],"datatype":"FP32","data":[]`,
		`"name":"e","shape":[2,0],"datatype":"FP32","data":[[],[]]`,
		`"name":"e","shape":[0,5],"datatype":"FP32","data":[]`,
	} {
		r := mustDecode(t, request(in))
		if len(r.Inputs[0].Data) != 0 || r.Inputs[0].Check() != nil {
			t.Errorf("%s: %x", in, r.Inputs[0].Data)
		}
	}
}

// TestDecodeNestedDeep decodes rank-4 data nested exactly as its shape.
func TestDecodeNestedDeep(t *testing.T) {
	r := mustDecode(t, request(`"name":"x","shape":[1,2,1,2],"datatype":"UINT8","data":[[[[1,2]],[[3,4]]]]`))
	if !bytes.Equal(r.Inputs[0].Data, []byte{1, 2, 3, 4}) {
		t.Errorf("data = %v", r.Inputs[0].Data)
	}
}

// TestDecodeFastPathFallback feeds FP32 data that the fast path hands to
// the general one, and checks both agree with strconv.
func TestDecodeFastPathFallback(t *testing.T) {
	data := "1.00000000000000000000001, 1e-50, 3.5e38, -0, 0.0000000000000000000000001, 1.5e+1,\t7"
	want := le(float32(1), float32(0), float32(math.Inf(1)), float32(math.Copysign(0, -1)), float32(1e-25), float32(15), float32(7))
	r := mustDecode(t, request(`"name":"x","shape":[7],"datatype":"FP32","data":[`+data+`]`))
	if !bytes.Equal(r.Inputs[0].Data, want) {
		t.Errorf("data = %x, want %x", r.Inputs[0].Data, want)
	}
}

func TestDecodeBinaryInputs(t *testing.T) {
	header := `{"inputs":[` +
		`{"name":"a","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}},` +
		`{"name":"b","shape":[3],"datatype":"INT8","data":[1,2,3]},` +
		`{"name":"c","shape":[1,3],"datatype":"UINT16","parameters":{"binary_data_size":6}}]}`
	binA, binC := le(float32(1.5), float32(-2)), le(uint16(1), uint16(2), uint16(65535))
	body := append(append([]byte(header), binA...), binC...)
	r, err := DecodeInferRequest(body, len(header))
	if err != nil {
		t.Fatal(err)
	}
	got := [][]byte{r.Inputs[0].Data, r.Inputs[1].Data, r.Inputs[2].Data}
	want := [][]byte{binA, {1, 2, 3}, binC}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("input %d: %x, want %x", i, got[i], want[i])
		}
		if err := r.Inputs[i].Check(); err != nil {
			t.Error(err)
		}
	}
}

func TestDecodeBytes(t *testing.T) {
	want := [][]byte{[]byte("/9j/4A=="), []byte("a\"b\u00e9")}
	check := func(t *testing.T, r *InferRequest) {
		t.Helper()
		in := r.Inputs[0]
		if in.DType != tensor.Bytes || fmt.Sprint(in.Shape) != "[2 1]" {
			t.Fatalf("input = %s %v", in.DType, in.Shape)
		}
		got, err := tensor.BytesElements(in.Data, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("element %d = %q, want %q", i, got[i], want[i])
			}
		}
	}
	t.Run("json nested", func(t *testing.T) {
		check(t, mustDecode(t, request(`"name":"s","shape":[2,1],"datatype":"BYTES","data":[["/9j/4A=="],["a\"b\u00e9"]]`)))
	})
	t.Run("json flat, data first", func(t *testing.T) {
		check(t, mustDecode(t, request(`"data":["/9j/4A==","a\"bé"],"name":"s","shape":[2,1],"datatype":"BYTES"`)))
	})
	t.Run("binary", func(t *testing.T) {
		var data []byte
		for _, e := range want {
			data = tensor.AppendBytesElement(data, e)
		}
		header := fmt.Sprintf(`{"inputs":[{"name":"s","shape":[2,1],"datatype":"BYTES","parameters":{"binary_data_size":%d}}]}`, len(data))
		r, err := DecodeInferRequest(append([]byte(header), data...), len(header))
		if err != nil {
			t.Fatal(err)
		}
		check(t, r)
	})
}

func TestDecodeClassification(t *testing.T) {
	r := mustDecode(t, `{"inputs":[],"outputs":[{"name":"p","parameters":{"classification":3,"binary_data":true}},{"name":"q"}]}`)
	want := []RequestedOutput{{Name: "p", Binary: true, Classification: 3}, {Name: "q"}}
	if fmt.Sprint(r.Outputs) != fmt.Sprint(want) {
		t.Errorf("Outputs = %v, want %v", r.Outputs, want)
	}
}
