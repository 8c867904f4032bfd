package admission

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// A request that declares both a chunked body and a Content-Length is
// request smuggling's classic lie: a proxy in front that trusts the
// Content-Length and the master, which reads the chunks (fasthttp, as RFC
// 9112 6.3 says), disagree on where the request ends, so the rest of the
// connection is another client's request to one of them and a body to
// the other. RFC 9112 lets a server reject it and says it must close the
// connection either way; nginx (since 1.21.1) rejects it with 400, and so
// does the master, from the header, with the connection closed after the
// answer and no byte of the body read. fasthttp forgets the Content-Length
// of a chunked request, so the raw header block is looked at, for chunked
// requests only.

// BothLengths is the refusal of such a request.
var BothLengths = Refusal{Status: fasthttp.StatusBadRequest,
	Msg: "the request declares both Transfer-Encoding: chunked and a Content-Length (RFC 9112 6.3: a request smuggling pattern); send one of them"}

// DeclaresLength reports whether a raw header block (RequestHeader's
// RawHeaders: "Key: value" lines, CRLF or LF) has a Content-Length line.
func DeclaresLength(raw []byte) bool {
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		key, _, ok := bytes.Cut(line, []byte{':'})
		if ok && bytes.EqualFold(bytes.TrimSpace(key), []byte(fasthttp.HeaderContentLength)) {
			return true
		}
	}
	return false
}
