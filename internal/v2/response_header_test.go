package v2

import (
	"reflect"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// What AppendInferResponse writes, DecodeResponseHeader reads back: the
// names (escaped), shapes, each binary output's size, a JSON output's
// data passed over.
func TestDecodeResponseHeaderReadsWhatIsWritten(t *testing.T) {
	outputs := []tensor.Tensor{
		{Name: "a\"\u00e9", DType: tensor.FP32, Shape: []int64{2, 1}, Data: f32Bytes(1.5, -2)},
		{Name: "b", DType: tensor.Int8, Shape: []int64{3}, Data: []byte{1, 0xff, 3}},
	}
	req := &InferRequest{ID: "q\\1", Outputs: []RequestedOutput{{Name: "a\"\u00e9", Binary: true}, {Name: "b"}}}
	out, headerLen := AppendInferResponse(nil, "my-model", req, outputs)
	h, err := DecodeResponseHeader(out[:headerLen])
	if err != nil {
		t.Fatalf("%v\n%s", err, out[:headerLen])
	}
	want := &ResponseHeader{ModelName: "my-model", ModelVersion: "1", ID: "q\\1", Outputs: []ResponseOutput{
		{Name: "a\"\u00e9", Datatype: "FP32", Shape: []int64{2, 1}, BinarySize: 8},
		{Name: "b", Datatype: "INT8", Shape: []int64{3}, BinarySize: -1},
	}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("decoded %+v\nwant    %+v", h, want)
	}
}

func TestDecodeResponseHeaderParametersAndNulls(t *testing.T) {
	h, err := DecodeResponseHeader([]byte(` {"id":null,"extra":[{"x":1}],"parameters":{"n":3,"o":{"p":[]}},` +
		`"outputs":[{"name":"a","shape":null,"parameters":{"k":true,"binary_data_size":0}}]} `))
	if err != nil {
		t.Fatal(err)
	}
	want := &ResponseHeader{Parameters: []Parameter{{"n", []byte("3")}, {"o", []byte(`{"p":[]}`)}},
		Outputs: []ResponseOutput{{Name: "a", BinarySize: 0, Parameters: []Parameter{{"k", []byte("true")}}}}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("decoded %+v\nwant    %+v", h, want)
	}
}

func TestDecodeResponseHeaderRefuses(t *testing.T) {
	for _, b := range []string{
		``, `nope`, `[]`, `{"outputs":{}}`, `{"outputs":[1]}`, `{"id":3}`,
		`{"outputs":[{"parameters":{"binary_data_size":-1}}]}`,
		`{"outputs":[{"parameters":{"binary_data_size":1.5}}]}`,
		`{"outputs":[{"shape":[1,"x"]}]}`,
		`{"model_name":"m"} trailing`,
		`{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	} {
		if h, err := DecodeResponseHeader([]byte(b)); err == nil {
			t.Errorf("%q decoded to %+v, want an error", b, h)
		}
	}
}
