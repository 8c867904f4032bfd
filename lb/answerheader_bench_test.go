package lb

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/valyala/fasthttp"
)

// metaAnswerHeader is a prep worker's answer header to GET
// /v2/models/default, as the master reads it.
const metaAnswerHeader = "HTTP/1.1 200 OK\r\nServer: supervisor-prep\r\nDate: Sat, 28 Nov 2026 10:40:00 GMT\r\n" +
	"Content-Type: application/json\r\nContent-Length: 191\r\nX-Request-Id: 6c1f0d2a9e4b3c58-000000000001\r\n\r\n"

// BenchmarkAnswerHeader is what the answer's header costs the master
// per request (issue 32): parse is fasthttp's parse of the worker's
// header into resp.Header plus the server's re-serialisation of it with
// the request id set again (what the master does); passthrough is the
// least a proxy that forwards the header bytes as they are must do:
// find the header's end and the Content-Length, and copy the bytes.
func BenchmarkAnswerHeader(b *testing.B) {
	raw := []byte(metaAnswerHeader)
	id := []byte("6c1f0d2a9e4b3c58-000000000001")
	b.Run("parse", func(b *testing.B) {
		var h fasthttp.ResponseHeader
		r := bytes.NewReader(raw)
		br := bufio.NewReaderSize(r, 4096)
		out := make([]byte, 0, 512)
		b.ReportAllocs()
		for b.Loop() {
			r.Reset(raw)
			br.Reset(r)
			h.Reset()
			if err := h.Read(br); err != nil {
				b.Fatal(err)
			}
			h.SetCanonical([]byte(HeaderRequestID), id)
			out = h.AppendBytes(out[:0])
		}
	})
	b.Run("passthrough", func(b *testing.B) {
		out := make([]byte, 0, 512)
		cl := []byte("\r\nContent-Length: ")
		b.ReportAllocs()
		for b.Loop() {
			end := bytes.Index(raw, []byte("\r\n\r\n"))
			i := bytes.Index(raw[:end], cl)
			if end < 0 || i < 0 || raw[i+len(cl)] != '1' {
				b.Fatal("no header end or Content-Length")
			}
			out = append(out[:0], raw[:end+4]...)
		}
	})
}
