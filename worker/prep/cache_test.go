package prep

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/respcache"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// cacheKey decodes a V2 request (headerLen -1 for JSON) and returns its key.
func cacheKey(t *testing.T, body string, headerLen int) respcache.Key {
	t.Helper()
	req, err := v2.DecodeInferRequest([]byte(body), headerLen)
	if err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	c := &modelCache{identity: "m\x00v1"}
	return c.key(req, req.Inputs)
}

func TestCacheKey(t *testing.T) {
	jsonReq := cacheKey(t, `{"id":"a","inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-2]}]}`, -1)
	header := `{"id":"b","inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"parameters":{"binary_data_size":8}}],` +
		`"parameters":{"binary_data_output":true}}`
	data := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))
	data = binary.LittleEndian.AppendUint32(data, math.Float32bits(-2))
	if bin := cacheKey(t, header+string(data), len(header)); bin != jsonReq {
		t.Error("the same tensors in JSON and in binary have different keys")
	}
	for name, body := range map[string]string{
		"other values":     `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-3]}]}`,
		"other shape":      `{"inputs":[{"name":"x","datatype":"FP32","shape":[2,1],"data":[1.5,-2]}]}`,
		"other input name": `{"inputs":[{"name":"y","datatype":"FP32","shape":[1,2],"data":[1.5,-2]}]}`,
		"classification":   `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-2]}],"outputs":[{"name":"y","parameters":{"classification":1}}]}`,
		"an output named":  `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-2]}],"outputs":[{"name":"y"}]}`,
	} {
		if cacheKey(t, body, -1) == jsonReq {
			t.Errorf("%s: same key as the original request", name)
		}
	}
	// The same 8 bytes as two FP32 or one FP64/INT64 are different inputs.
	i64 := `{"inputs":[{"name":"x","datatype":"INT64","shape":[1],"parameters":{"binary_data_size":8}}]}`
	f64 := `{"inputs":[{"name":"x","datatype":"FP64","shape":[1],"parameters":{"binary_data_size":8}}]}`
	if cacheKey(t, i64+string(data), len(i64)) == cacheKey(t, f64+string(data), len(f64)) {
		t.Error("same bytes with another datatype share a key")
	}
	other := &modelCache{identity: "m\x00v2"}
	req, _ := v2.DecodeInferRequest([]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-2]}]}`), -1)
	if other.key(req, req.Inputs) == jsonReq {
		t.Error("another model identity (a new version) shares the key")
	}
}
