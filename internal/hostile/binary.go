package hostile

import (
	"encoding/json"
	"strconv"
)

// BytesFloodBinary is BytesFloodJSON with the binary tensor data
// extension: a JSON header naming one BYTES input of shape [n] whose
// binary_data_size is 4n bytes, then n elements of Triton's serialisation
// (a 4-byte little-endian length, then the bytes), all of length 0: 4
// bytes a element, no JSON to parse for them, so the whole cost is in how
// the server counts and splits them. It returns the body and the JSON
// header's length, to send as Inference-Header-Content-Length.
func BytesFloodBinary(input string, n int) (body []byte, headerLen int) {
	name, _ := json.Marshal(input) // a string always marshals
	out := make([]byte, 0, 120+len(name)+4*n)
	out = append(out, `{"inputs":[{"name":`...)
	out = append(out, name...)
	out = append(out, `,"datatype":"BYTES","shape":[`...)
	out = strconv.AppendInt(out, int64(n), 10)
	out = append(out, `],"parameters":{"binary_data_size":`...)
	out = strconv.AppendInt(out, 4*int64(n), 10)
	out = append(out, "}}]}"...)
	headerLen = len(out)
	return append(out, make([]byte, 4*n)...), headerLen
}
