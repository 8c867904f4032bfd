package hostile

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
)

// GzipBomb returns a gzip body (Content-Encoding: gzip) that inflates to
// a valid V2 JSON infer request of size bytes: request (a JSON object)
// with size-len(request) spaces after its opening brace, legal JSON
// whitespace. Deflate encodes a run of spaces at about 1:1000, so 64 MiB
// of request travel as about 64 KiB: what the server must bound is the
// decompressed size, not the body it received.
func GzipBomb(request []byte, size int) []byte {
	var out bytes.Buffer
	w, _ := gzip.NewWriterLevel(&out, gzip.BestCompression) // a valid level
	writeBomb(w, request, size)
	return out.Bytes()
}

// DeflateBomb is GzipBomb for Content-Encoding: deflate, in the zlib
// format Triton's client sends (Python's zlib.compress).
func DeflateBomb(request []byte, size int) []byte {
	var out bytes.Buffer
	w, _ := zlib.NewWriterLevel(&out, flate.BestCompression) // a valid level
	writeBomb(w, request, size)
	return out.Bytes()
}

// writeBomb writes request padded to size with spaces into w and closes
// it, never holding more than 64 KiB of the expanded form.
func writeBomb(w io.WriteCloser, request []byte, size int) {
	if len(request) == 0 || request[0] != '{' {
		panic("hostile: a bomb's request must be a JSON object")
	}
	spaces := bytes.Repeat([]byte{' '}, 64<<10)
	// Writes to a bytes.Buffer do not fail.
	_, _ = w.Write(request[:1])
	for pad := size - len(request); pad > 0; pad -= len(spaces) {
		_, _ = w.Write(spaces[:min(pad, len(spaces))])
	}
	_, _ = w.Write(request[1:])
	_ = w.Close()
}
