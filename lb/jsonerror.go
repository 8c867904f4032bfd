package lb

import (
	"unicode/utf8"

	"github.com/valyala/fasthttp"
)

// writeError replaces whatever response was being built with a V2 error body.
// It keeps no state across calls and imports nothing of the project, so the
// proxy stays independent of the model server's packages.
func writeError(ctx *fasthttp.RequestCtx, status int, msg string) {
	ctx.Response.Reset()
	ctx.Response.SetStatusCode(status)
	ctx.Response.Header.SetContentType("application/json")
	var buf [256]byte
	b := append(buf[:0], `{"error":`...)
	b = appendJSONString(b, msg)
	b = append(b, '}')
	ctx.Response.SetBody(b)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal. Control characters
// and the quote and backslash are escaped; invalid UTF-8 becomes U+FFFD so
// the body always parses.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
		i++
	}
	return append(dst, '"')
}
