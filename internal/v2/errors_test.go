package v2

import (
	"fmt"
	"strings"
	"testing"
)

func TestDecodeErrors(t *testing.T) {
	x := func(fields string) string { return request(`"name":"x",` + fields) }
	cases := []struct {
		name, body, want string
	}{
		{"empty body", ``, "malformed JSON: unexpected end of input at offset 0"},
		{"not an object", `[1]`, "the request must be a JSON object, got an array"},
		{"truncated", `{"inputs":[{"name":"x"`, "malformed JSON: unexpected end of input at offset 22"},
		{"garbage", `{"inputs":[] x}`, "malformed JSON: unexpected 'x' at offset 13"},
		{"trailing", `{"inputs":[]} {}`, "malformed JSON: unexpected '{' at offset 14, expected the end of the JSON header"},
		{"bad escape", `{"id":"\q","inputs":[]}`, "expected a valid escape sequence"},
		{"control char", "{\"id\":\"a\x01\",\"inputs\":[]}", "no control character inside a string"},
		{"deep nesting", `{"ext":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"inputs":[]}`, "nests deeper than 64 levels"},
		{"no inputs", `{"id":"a"}`, `the request has no "inputs" field`},
		{"duplicate field", `{"inputs":[],"inputs":[]}`, `more than one "inputs" field`},
		{"id type", `{"id":5,"inputs":[]}`, `"id" must be a string, got a number`},
		{"inputs type", `{"inputs":{}}`, `"inputs" must be an array, got an object`},
		{"input type", `{"inputs":[1]}`, `inputs[0] must be an object, got a number`},
		{"parameters type", `{"parameters":[],"inputs":[]}`, `"parameters" must be an object, got an array`},
		{"binary_data_output type", `{"parameters":{"binary_data_output":"yes"},"inputs":[]}`, "parameters.binary_data_output must be true or false, got a string"},
		{"timeout type", `{"parameters":{"timeout":1.5},"inputs":[]}`, "parameters.timeout (microseconds) must be an integer from 0 to"},
		{"priority negative", `{"parameters":{"priority":-1},"inputs":[]}`, "parameters.priority must be an integer from 0 to 2147483647, got -1"},
		{"sequence_id", `{"parameters":{"sequence_id":42},"inputs":[]}`, "parameters.sequence_id: this server has no sequence batcher"},
		{"sequence_id string", `{"parameters":{"sequence_id":"s1"},"inputs":[]}`, "parameters.sequence_id: this server has no sequence batcher"},
		{"sequence_start", `{"parameters":{"sequence_start":true},"inputs":[]}`, "parameters.sequence_start: this server has no sequence batcher"},
		{"sequence_end", `{"parameters":{"timeout":5,"sequence_end":false},"inputs":[]}`, "parameters.sequence_end: this server has no sequence batcher"},
		// A region reaches a worker only in a body the master could not
		// read (compressed): refused, not answered inline (an output) or
		// as a missing input.
		{"input region", x(`"shape":[1],"datatype":"FP32","parameters":{"shared_memory_region":"r","shared_memory_byte_size":4}`), `input "x": parameters.shared_memory_region is read by the server only`},
		{"output region", `{"inputs":[],"outputs":[{"name":"y","parameters":{"shared_memory_region":"r","shared_memory_byte_size":4}}]}`, `outputs[0]: parameters.shared_memory_region is read by the server only`},
		{"no name", request(`"shape":[1],"datatype":"FP32","data":[1]`), `inputs[0] has no "name"`},
		{"name type", request(`"name":1`), `inputs[0]: "name" must be a string, got a number`},
		{"no datatype", x(`"shape":[1],"data":[1]`), `input "x" has no "datatype"`},
		{"datatype type", x(`"datatype":true`), `input "x": "datatype" must be a string, got a boolean`},
		{"unknown datatype", x(`"shape":[1],"datatype":"FP8","data":[1]`), `input "x": unknown datatype "FP8"; use one of BOOL,`},
		{"bytes element type", x(`"shape":[2],"datatype":"BYTES","data":["a",1]`), `input "x": data[1] must be a string, got a number`},
		{"bytes too few", x(`"shape":[2],"datatype":"BYTES","data":["a"]`), `input "x": shape [2] needs 2 values but data has 1`},
		{"bytes huge shape", x(`"shape":[60000],"datatype":"BYTES","data":["a"]`), `input "x": shape [60000] needs 60000 values but the request is too short`},
		{"bytes over the limit", x(`"shape":[100000],"datatype":"BYTES","data":["a"]`), `input "x": BYTES shape [100000] makes 100000 elements in the request, more than the 65536 allowed`},
		{"no shape", x(`"datatype":"FP32","data":[1]`), `input "x" has no "shape"`},
		{"shape type", x(`"shape":"1","datatype":"FP32"`), `input "x": "shape" must be an array of non-negative integers, got a string`},
		{"shape negative", x(`"shape":[-1],"datatype":"FP32"`), `input "x": shape[0] must be a non-negative integer, got -1`},
		{"shape fraction", x(`"shape":[1.5],"datatype":"FP32"`), `input "x": shape[0] must be a non-negative integer, got 1.5`},
		{"shape rank", x(`"shape":[` + strings.Repeat("1,", 40) + `1],"datatype":"FP32"`), `input "x": shape has more than 32 dimensions`},
		{"shape too large", x(`"shape":[1099511627776,2],"datatype":"FP32","data":[1]`), `input "x": shape [1099511627776,2] is too large`},
		{"huge shape", x(`"shape":[1000000000000],"datatype":"FP32","data":[1,2]`), `input "x": shape [1000000000000] needs 1000000000000 values but the request is too short to hold them`},
		{"huge shape, data first", request(`"data":[1,2],"name":"x","shape":[100000],"datatype":"FP64"`), `input "x": shape [100000] needs 100000 values but the request is too short`},
		{"no data", x(`"shape":[1],"datatype":"FP32"`), `input "x" has no "data" and no parameters.binary_data_size`},
		{"data type", x(`"shape":[1],"datatype":"FP32","data":{}`), `input "x": "data" must be an array, got an object`},
		{"too few", x(`"shape":[3],"datatype":"FP32","data":[1,2]`), `input "x": shape [3] needs 3 values but data has 2`},
		{"too many", x(`"shape":[2],"datatype":"FP32","data":[1,2,3]`), `input "x": shape [2] needs 2 values but data has more`},
		{"element type", x(`"shape":[2],"datatype":"FP32","data":[1,"2"]`), `input "x": data[1] must be a number, got a string`},
		{"bool type", x(`"shape":[2],"datatype":"BOOL","data":[true,1]`), `input "x": data[1] must be true or false, got a number`},
		{"null int", x(`"shape":[1],"datatype":"INT32","data":[null]`), `input "x": data[0] must be a number, got null`},
		{"int8 high", x(`"shape":[1],"datatype":"INT8","data":[128]`), `input "x": data[0] is 128, outside the INT8 range [-128, 127]`},
		{"int8 low", x(`"shape":[2],"datatype":"INT8","data":[0,-129]`), `input "x": data[1] is -129, outside the INT8 range [-128, 127]`},
		{"uint8 negative", x(`"shape":[1],"datatype":"UINT8","data":[-1]`), `outside the UINT8 range [0, 255]`},
		{"uint64 high", x(`"shape":[1],"datatype":"UINT64","data":[18446744073709551616]`), `outside the UINT64 range [0, 18446744073709551615]`},
		{"int64 low", x(`"shape":[1],"datatype":"INT64","data":[-9223372036854775809]`), `outside the INT64 range [-9223372036854775808, 9223372036854775807]`},
		{"int fraction", x(`"shape":[1],"datatype":"INT32","data":[1.0]`), `input "x": data[0] is 1.0 but INT32 needs integers`},
		{"int exponent", x(`"shape":[1],"datatype":"UINT16","data":[1e2]`), `input "x": data[0] is 1e2 but UINT16 needs integers`},
		{"bad number", x(`"shape":[2],"datatype":"FP32","data":[1,01]`), `malformed JSON: unexpected '1' at offset`},
		{"nan literal", x(`"shape":[1],"datatype":"FP32","data":[NaN]`), `malformed JSON: unexpected 'N'`},
		{"trailing comma", x(`"shape":[2],"datatype":"FP32","data":[1,2,]`), `malformed JSON: unexpected ']'`},
		{"nested rank 1", x(`"shape":[2],"datatype":"FP32","data":[[1,2]]`), `input "x": data is nested but shape [2] has no inner dimensions; send it flat`},
		{"nested mismatch", x(`"shape":[2,3],"datatype":"FP32","data":[[1,2],[3,4],[5,6]]`), `input "x": nested data must follow shape [2,3], but an array at depth 2 has 2 elements instead of 3`},
		{"nested outer count", x(`"shape":[2,2],"datatype":"FP32","data":[[1,2],[3,4],[5,6]]`), `needs 4 values but data has more`},
		{"nested too deep", x(`"shape":[1,2],"datatype":"FP32","data":[[[1],[2]]]`), `input "x": nested data must follow shape [1,2], but an array at depth 2 holds an array where a value belongs`},
		{"nested value where array", x(`"shape":[2,1],"datatype":"FP32","data":[[1],2]`), `input "x": nested data must follow shape [2,1], but an array at depth 1 holds a value where an array belongs`},
		{"mixed flat", x(`"shape":[2],"datatype":"FP32","data":[1,[2]]`), `input "x": data mixes values and arrays`},
		{"duplicate input", `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]},{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`, `input "x" appears more than once`},
		{"binary without header", x(`"shape":[1],"datatype":"FP32","parameters":{"binary_data_size":4}`), `input "x" has parameters.binary_data_size but the request has no Inference-Header-Content-Length header`},
		{"binary and data", x(`"shape":[1],"datatype":"FP32","data":[1],"parameters":{"binary_data_size":4}`), `input "x" has both "data" and parameters.binary_data_size`},
		{"binary size mismatch", x(`"shape":[2],"datatype":"FP32","parameters":{"binary_data_size":4}`), `input "x": binary_data_size is 4 but shape [2] of FP32 needs 8 bytes`},
		{"binary size type", x(`"shape":[2],"datatype":"FP32","parameters":{"binary_data_size":"8"}`), `input "x": parameters.binary_data_size must be a non-negative integer, got a string`},
		{"outputs type", `{"inputs":[],"outputs":"y"}`, `"outputs" must be an array, got a string`},
		{"output no name", `{"inputs":[],"outputs":[{}]}`, `outputs[0] has no "name"`},
		{"output duplicate", `{"inputs":[],"outputs":[{"name":"y"},{"name":"y"}]}`, `output "y" is requested more than once`},
		{"output binary type", `{"inputs":[],"outputs":[{"name":"y","parameters":{"binary_data":1}}]}`, `outputs[0].parameters.binary_data must be true or false, got a number`},
		{"classification type", `{"inputs":[],"outputs":[{"name":"y","parameters":{"classification":"3"}}]}`, `outputs[0].parameters.classification must be a non-negative integer, got a string`},
		{"classification negative", `{"inputs":[],"outputs":[{"name":"y","parameters":{"classification":-3}}]}`, `outputs[0].parameters.classification must be an integer from 0 to 1048576, got -3`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeInferRequest([]byte(c.body), -1)
			if err == nil {
				t.Fatalf("accepted %s: %+v", clipTest(c.body), r)
			}
			wantError(t, err, c.want)
		})
	}
}

func TestDecodeBinaryErrors(t *testing.T) {
	header := `{"inputs":[{"name":"a","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}`
	cases := []struct {
		name      string
		body      string
		headerLen int
		want      string
	}{
		{"header length beyond body", header, len(header) + 1, fmt.Sprintf("Inference-Header-Content-Length %d is outside the %d-byte body", len(header)+1, len(header))},
		{"header length negative", header, -2, "Inference-Header-Content-Length -2 is outside"},
		{"short binary", header + "1234", len(header), `input "a": binary_data_size is 8 but only 4 bytes of binary data remain`},
		{"extra binary", header + "123456789", len(header), "1 bytes of binary data after the JSON header belong to no input"},
		{"header cut short", header + "12345678", len(header) - 1, "malformed JSON"},
		{"bytes truncated element", bytesHeader(2, 9) + "\x03\x00\x00\x00abc\x05\x00", len(bytesHeader(2, 9)), `input "s": binary BYTES data for shape [2]: element 1: 2 bytes left, too few for its 4-byte length`},
		{"bytes length past end", bytesHeader(1, 6) + "\x09\x00\x00\x00ab", len(bytesHeader(1, 6)), `element 0: length 9 but only 2 bytes left`},
		{"bytes trailing", bytesHeader(1, 7) + "\x01\x00\x00\x00abc", len(bytesHeader(1, 7)), `2 bytes after the last of 1 elements`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeInferRequest([]byte(c.body), c.headerLen)
			wantError(t, err, c.want)
		})
	}
}

// bytesHeader is the JSON header of a binary request with one BYTES input
// "s" of n elements in size bytes.
func bytesHeader(n, size int) string {
	return fmt.Sprintf(`{"inputs":[{"name":"s","shape":[%d],"datatype":"BYTES","parameters":{"binary_data_size":%d}}]}`, n, size)
}
