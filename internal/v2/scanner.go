package v2

import (
	"fmt"
	"math"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/supervisor-dev/supervisor/internal/jsonnum"
)

// maxDepth bounds how deeply the JSON header may nest, so that a hostile
// body of a million '[' cannot exhaust the stack.
const maxDepth = 64

// scanner reads JSON from b, one token at a time. Offsets in its errors are
// byte offsets into b, which starts at the first byte of the request body.
// It is hand-written because decoding runs in the prep stage on every
// request: each number of a "data" array goes straight into the tensor's
// little-endian bytes, with no []interface{}, encoding/json or reflection
// on that path (the default model's input is 150,528 numbers a request).
type scanner struct {
	b []byte
	i int
	// end is the length of the whole JSON when b holds only its first
	// bytes (prefix mode, DecodeInferRequestPrefix); 0 means b is whole.
	// In prefix mode running out of b is ErrTruncated, never malformed.
	end int
}

// length is the length of the whole JSON, of which b may be a prefix.
func (s *scanner) length() int { return max(s.end, len(s.b)) }

// cut reports whether b ends before the JSON does (prefix mode).
func (s *scanner) cut() bool { return s.end > len(s.b) }

// ws skips JSON whitespace.
func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte without consuming it, or 0 at the end.
func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// syntax reports malformed JSON at the current offset.
// In prefix mode, the end of the prefix is not an error in the JSON: the
// *Error then wraps ErrTruncated.
func (s *scanner) syntax(expected string) *Error {
	e := syntaxAt(s.b, s.i, expected)
	if s.i >= len(s.b) && s.cut() {
		e.cause = ErrTruncated
	}
	return e
}

func syntaxAt(b []byte, i int, expected string) *Error {
	if i >= len(b) {
		return badRequest("malformed JSON: unexpected end of input at offset %d, expected %s", i, expected)
	}
	return badRequest("malformed JSON: unexpected %s at offset %d, expected %s", quoteByte(b[i]), i, expected)
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// expect consumes c, which must be the next byte.
func (s *scanner) expect(c byte) error {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return nil
	}
	return s.syntax(fmt.Sprintf("%q", rune(c)))
}

// kind names the JSON type of the value at the current offset, for messages
// such as `"shape" must be an array, got a string`.
func (s *scanner) kind() string {
	switch s.peek() {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "a number"
	}
	return "no valid JSON value"
}

// object reads an object, calling field with each key while the scanner
// sits at the start of that key's value; field must consume the value.
func (s *scanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	s.ws()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if s.peek() != '"' {
			return s.syntax("a field name")
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		s.ws()
		if err := s.expect(':'); err != nil {
			return err
		}
		s.ws()
		if err := field(key); err != nil {
			return err
		}
		if err := s.next('}'); err != nil || s.b[s.i-1] == '}' {
			return err
		}
	}
}

// array reads an array, calling elem for each element while the scanner
// sits at its start; elem must consume the element.
func (s *scanner) array(elem func(i int) error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	s.ws()
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		s.ws()
		if err := elem(n); err != nil {
			return err
		}
		if err := s.next(']'); err != nil || s.b[s.i-1] == ']' {
			return err
		}
	}
}

// next consumes the ',' or the closing byte that follows a member.
func (s *scanner) next(closing byte) error {
	s.ws()
	if c := s.peek(); c == ',' || c == closing {
		s.i++
		return nil
	}
	return s.syntax(fmt.Sprintf("',' or '%c'", closing))
}

// literal consumes the keyword word (true, false or null).
func (s *scanner) literal(word string) error {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return nil
	}
	if s.cut() && len(s.b)-s.i < len(word) && word[:len(s.b)-s.i] == string(s.b[s.i:]) {
		s.i = len(s.b) // the prefix ends inside the keyword
	}
	return s.syntax(word)
}

// bool reads true or false.
func (s *scanner) bool() (bool, error) {
	if s.peek() == 't' {
		return true, s.literal("true")
	}
	return false, s.literal("false")
}

// str reads a string and returns its decoded bytes. Without escapes the
// result aliases b; with them it is a new slice.
func (s *scanner) str() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], nil
		case c == '\\':
			return s.unescape(append([]byte(nil), s.b[start:s.i]...))
		case c < 0x20:
			return nil, s.syntax("no control character inside a string")
		default:
			s.i++
		}
	}
	return nil, s.syntax(`'"'`)
}

// unescape continues str once a backslash has been seen, appending the
// decoded remainder of the string to out.
func (s *scanner) unescape(out []byte) ([]byte, error) {
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return out, nil
		case c < 0x20:
			return nil, s.syntax("no control character inside a string")
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		s.i++
		var err error
		if out, err = s.escape(out); err != nil {
			return nil, err
		}
	}
	return nil, s.syntax(`'"'`)
}

// escape decodes one escape sequence; the backslash is already consumed.
func (s *scanner) escape(out []byte) ([]byte, error) {
	const simple = `"\/bfnrt`
	const decoded = "\"\\/\b\f\n\r\t"
	c := s.peek()
	for k := 0; k < len(simple); k++ {
		if c == simple[k] {
			s.i++
			return append(out, decoded[k]), nil
		}
	}
	if c != 'u' {
		return nil, s.syntax("a valid escape sequence")
	}
	s.i++
	r, err := s.hex4()
	if err != nil {
		return nil, err
	}
	if utf16.IsSurrogate(r) && len(s.b)-s.i >= 6 && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
		save := s.i
		s.i += 2
		r2, err := s.hex4()
		if err != nil {
			return nil, err
		}
		if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
			return utf8.AppendRune(out, pair), nil
		}
		s.i = save // a lone surrogate followed by an unrelated escape
	}
	return utf8.AppendRune(out, r), nil // lone surrogates become U+FFFD
}

func (s *scanner) hex4() (rune, error) {
	if len(s.b)-s.i < 4 {
		s.i = len(s.b)
		return 0, s.syntax("4 hex digits after \\u")
	}
	var r rune
	for k := 0; k < 4; k++ {
		c := s.b[s.i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, s.syntax("4 hex digits after \\u")
		}
		r = r<<4 | rune(c)
		s.i++
	}
	return r, nil
}

// skip consumes one value of any type, checking that it is well-formed.
// depth is the nesting level of the value, bounded by maxDepth.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return badRequest("request JSON nests deeper than %d levels at offset %d", maxDepth, s.i)
	}
	switch s.peek() {
	case '{':
		return s.object(func([]byte) error { return s.skip(depth + 1) })
	case '[':
		return s.array(func(int) error { return s.skip(depth + 1) })
	case '"':
		_, err := s.str()
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	start := s.i
	_, end, ok := jsonnum.Scan(s.b, s.i)
	s.i = end
	if !ok && end == start {
		return s.syntax("a value")
	}
	if !ok {
		return s.syntax("a digit")
	}
	return nil
}

// intIn reads an integer literal in [0, hi]. what names the field in the
// message when the value is something else.
func (s *scanner) intIn(what string, hi int64) (int64, error) {
	start := s.i
	n, end, ok := jsonnum.Scan(s.b, s.i)
	switch {
	case !ok && end == start:
		if s.kind() == "no valid JSON value" {
			return 0, s.syntax("a value")
		}
		return 0, badRequest("%s must be a non-negative integer, got %s", what, s.kind())
	case !ok:
		s.i = end
		return 0, s.syntax("a digit")
	}
	s.i = end
	v, ok := n.Int(0, hi)
	switch {
	case ok:
		return v, nil
	case hi == math.MaxInt64:
		return 0, badRequest("%s must be a non-negative integer, got %s", what, clip(s.b[start:end]))
	}
	return 0, badRequest("%s must be an integer from 0 to %d, got %s", what, hi, clip(s.b[start:end]))
}

// clip quotes a token for a message, shortened if it is long.
func clip(tok []byte) string {
	const max = 32
	if len(tok) > max {
		return string(tok[:max]) + "..."
	}
	return string(tok)
}
