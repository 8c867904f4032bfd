package hostile

import (
	"encoding/json"
	"strconv"
)

// BytesFloodJSON returns a V2 JSON infer request whose one input, named
// input, is BYTES of shape [n] holding n empty strings: 3 bytes a
// element on the wire ("",), so 64 MiB carry 22 million of them, each of
// which a decoder that expands before it counts turns into a slice header
// and a length prefix (about 30 bytes).
func BytesFloodJSON(input string, n int) []byte {
	name, _ := json.Marshal(input) // a string always marshals
	out := make([]byte, 0, 80+len(name)+3*n)
	out = append(out, `{"inputs":[{"name":`...)
	out = append(out, name...)
	out = append(out, `,"datatype":"BYTES","shape":[`...)
	out = strconv.AppendInt(out, int64(n), 10)
	out = append(out, `],"data":[`...)
	for i := range n {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `""`...)
	}
	return append(out, "]}]}"...)
}
