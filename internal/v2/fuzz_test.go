package v2

import (
	"errors"
	"strings"
	"testing"
)

func FuzzDecodeInferRequest(f *testing.F) {
	binHeader := `{"inputs":[{"name":"a","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}},{"name":"b","shape":[1],"datatype":"INT8","data":[1]}]}`
	bytesSeed := `{"inputs":[{"name":"img","shape":[2],"datatype":"BYTES","parameters":{"binary_data_size":11}}]}`
	seeds := []struct {
		body      string
		headerLen int
	}{
		{request(`"name":"x","shape":[2,2],"datatype":"FP32","data":[[1,2],[3,4]]`), -1},
		{request(`"name":"x","shape":[4],"datatype":"FP16","data":[1e-8,65520,0.1,-0]`), -1},
		{request(`"data":[true,false],"name":"x","shape":[2],"datatype":"BOOL"`), -1},
		{request(`"name":"x","shape":[3],"datatype":"UINT64","data":[0,18446744073709551615,1]`), -1},
		{request(`"name":"x","shape":[2],"datatype":"INT8","data":[-128,127]`), -1},
		{request(`"name":"x","shape":[1],"datatype":"BF16","data":[null]`), -1},
		{`{"id":"\ud83d\ude00","parameters":{"timeout":5,"priority":1,"binary_data_output":true},"inputs":[],"outputs":[{"name":"y","parameters":{"binary_data":true}}]}`, -1},
		{binHeader + "\x00\x00\xc0\x3f\x00\x00\x00\xc0", len(binHeader)},
		// Broken: truncated, huge shapes, deep nesting, wrong types.
		{request(`"name":"x","shape":[2,2],"datatype":"FP32","data":[[1,2],[3`), -1},
		{request(`"name":"x","shape":[1000000000000],"datatype":"FP32","data":[1]`), -1},
		{request(`"name":"x","shape":[1099511627776,1099511627776],"datatype":"FP32","data":[1]`), -1},
		{`{"x":` + strings.Repeat("[", 1000) + `}`, -1},
		{request(`"name":"x","shape":[1,1,1],"datatype":"FP32","data":[[[[[[1]]]]]]`), -1},
		{request(`"name":5,"shape":"a","datatype":[],"data":{}`), -1},
		{request(`"name":"x","shape":[1],"datatype":"INT32","data":[1.5]`), -1},
		{binHeader + "\x00", len(binHeader)},
		// BYTES (encoded images): JSON strings, nested, binary
		// length-prefixed, and broken prefixes.
		{request(`"name":"img","shape":[2],"datatype":"BYTES","data":["/9j/4AAQ","iVBORw0KGgo="]`), -1},
		{request(`"name":"img","shape":[1,1],"datatype":"BYTES","data":[["\u00ff\u00d8\\\"x"]]`), -1},
		{bytesSeed + "\x03\x00\x00\x00\xff\xd8\xff\x00\x00\x00\x00", len(bytesSeed)},
		{bytesSeed + "\xff\xff\xff\xff\xff\xd8\xff\x00\x00\x00", len(bytesSeed)},
		{bytesSeed + "\x01\x00\x00\x00", len(bytesSeed)},
		{`{"inputs":[],"outputs":[{"name":"y","parameters":{"classification":5,"binary_data":true}}]}`, -1},
		{binHeader, len(binHeader) + 5},
	}
	for _, s := range seeds {
		f.Add([]byte(s.body), s.headerLen)
	}
	f.Fuzz(func(t *testing.T, body []byte, headerLen int) {
		r, err := DecodeInferRequest(body, headerLen)
		prefixAgrees(t, body, headerLen, err)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != 400 || e.Msg == "" {
				t.Fatalf("error %v is not a 400 *Error", err)
			}
			return
		}
		for i := range r.Inputs {
			if err := r.Inputs[i].Check(); err != nil {
				t.Fatalf("accepted a tensor that fails Check: %v", err)
			}
		}
		// Whatever was accepted must encode without panicking.
		AppendInferResponse(nil, "m", r, r.Inputs)
	})
}

// prefixAgrees checks the prefix decode against the whole one at every
// cut point (sampled for large bodies): a prefix it refuses belongs to a request the whole decode
// refuses too (with the same status), and a valid request's prefixes all
// pass.
func prefixAgrees(t *testing.T, body []byte, headerLen int, whole error) {
	t.Helper()
	step := max(1, len(body)/256) // every cut of a small body
	for k := 0; k <= len(body); k += step {
		_, err := DecodeInferRequestPrefix(body[:k:k], int64(len(body)), headerLen, Limits{})
		if err == nil || errors.Is(err, ErrTruncated) {
			continue
		}
		if whole == nil {
			t.Fatalf("the %d-byte prefix of a valid request is refused: %v", k, err)
		}
		var e *Error
		if !errors.As(err, &e) || e.Status != 400 {
			t.Fatalf("prefix error %v is not a 400 *Error", err)
		}
	}
}
