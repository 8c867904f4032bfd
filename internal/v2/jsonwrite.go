package v2

import (
	"strconv"
	"unicode/utf8"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// AppendString appends s as a JSON string, as the workers' answers write
// their strings (the gRPC front writes its requests' headers with it).
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// appendString appends s as a JSON string. Control characters, quotes and
// backslashes are escaped; invalid UTF-8 becomes U+FFFD, so the output is
// always valid JSON; U+2028 and U+2029 are escaped for JavaScript clients.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			if r == utf8.RuneError {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			}
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendShape appends a shape as a JSON array of integers.
func appendShape(dst []byte, shape []int64) []byte {
	dst = append(dst, '[')
	for i, d := range shape {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, d, 10)
	}
	return append(dst, ']')
}

// appendSpecs appends [{"name","datatype","shape"}, ...].
func appendSpecs(dst []byte, specs []tensor.Spec) []byte {
	dst = append(dst, '[')
	for i := range specs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":`...)
		dst = appendString(dst, specs[i].Name)
		dst = append(dst, `,"datatype":"`...)
		dst = append(dst, specs[i].DType.String()...)
		dst = append(dst, `","shape":`...)
		dst = appendShape(dst, specs[i].Shape)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}
