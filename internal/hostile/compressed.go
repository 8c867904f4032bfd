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
// whitespace. Deflate encodes a run of spaces at about 1:1000 (1:650 in
// the 64 KiB members used here), so 64 MiB of request travel as about
// 100 KiB: what the server must bound is the decompressed size, not the
// body it received. The body is a series of
// gzip members (RFC 1952 allows several; gzip -d, Go and Python read
// them all as one), all but the first and last the same 64 KiB of spaces,
// so building it costs 64 KiB of compression whatever size is.
func GzipBomb(request []byte, size int) []byte {
	checkRequest(request)
	const chunk = 64 << 10
	var out bytes.Buffer
	gzipMember(&out, request[:1])
	pad := size - len(request)
	if pad >= chunk {
		var m bytes.Buffer
		gzipMember(&m, bytes.Repeat([]byte{' '}, chunk))
		for ; pad >= chunk; pad -= chunk {
			out.Write(m.Bytes())
		}
	}
	gzipMember(&out, append(bytes.Repeat([]byte{' '}, max(pad, 0)), request[1:]...))
	return out.Bytes()
}

// gzipMember appends one gzip member holding b to out.
func gzipMember(out *bytes.Buffer, b []byte) {
	w, _ := gzip.NewWriterLevel(out, gzip.BestCompression) // a valid level
	// Writes to a bytes.Buffer do not fail.
	_, _ = w.Write(b)
	_ = w.Close()
}

// DeflateBomb is GzipBomb for Content-Encoding: deflate, in the zlib
// format Triton's client sends (Python's zlib.compress): one stream, so
// building it compresses all size bytes (about 0.2 s for 64 MiB).
func DeflateBomb(request []byte, size int) []byte {
	var out bytes.Buffer
	w, _ := zlib.NewWriterLevel(&out, flate.BestCompression) // a valid level
	writeBomb(w, request, size)
	return out.Bytes()
}

// writeBomb writes request padded to size with spaces into w and closes
// it, never holding more than 64 KiB of the expanded form.
func writeBomb(w io.WriteCloser, request []byte, size int) {
	checkRequest(request)
	spaces := bytes.Repeat([]byte{' '}, 64<<10)
	// Writes to a bytes.Buffer do not fail.
	_, _ = w.Write(request[:1])
	for pad := size - len(request); pad > 0; pad -= len(spaces) {
		_, _ = w.Write(spaces[:min(pad, len(spaces))])
	}
	_, _ = w.Write(request[1:])
	_ = w.Close()
}

// checkRequest panics unless request is a JSON object: the padding goes
// after its opening brace.
func checkRequest(request []byte) {
	if len(request) == 0 || request[0] != '{' {
		panic("hostile: a bomb's request must be a JSON object")
	}
}
