package hostile

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
)

// AnswerBomb is a binary inference request for the generated types model
// (4 INT64 and 4 BOOL a row) whose answer in JSON is about three times
// its size inflated: rows of INT64 -2^63+1 (the longest JSON number, 8
// bytes in binary) and true, inflating to just under size. It returns
// the JSON header, whose length is the request's
// Inference-Header-Content-Length, and the gzip'd body (header then
// tensors), a few hundred KiB for 64 MiB inflated.
func AnswerBomb(size int64) (header string, gz []byte) {
	rows := int(max(size-512, 36) / 36)
	header = fmt.Sprintf(`{"inputs":[{"name":"ids","datatype":"INT64","shape":[%d,4],"parameters":{"binary_data_size":%d}},`+
		`{"name":"mask","datatype":"BOOL","shape":[%d,4],"parameters":{"binary_data_size":%d}}]}`, rows, rows*32, rows, rows*4)
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_, _ = w.Write([]byte(header))
	var id [8]byte
	binary.LittleEndian.PutUint64(id[:], 1<<63+1)
	ids := bytes.Repeat(id[:], 4*1024)
	for n := rows * 4; n > 0; n -= 1024 * 4 {
		_, _ = w.Write(ids[:min(n, 4*1024)*8])
	}
	_, _ = w.Write(bytes.Repeat([]byte{1}, rows*4))
	_ = w.Close()
	return header, z.Bytes()
}
