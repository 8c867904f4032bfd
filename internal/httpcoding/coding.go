package httpcoding

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Coding is an HTTP content coding this package speaks.
type Coding uint8

// The codings.
const (
	Identity Coding = iota
	Gzip
	Deflate
)

// String is the coding's Content-Encoding token.
func (c Coding) String() string {
	switch c {
	case Gzip:
		return "gzip"
	case Deflate:
		return "deflate"
	}
	return "identity"
}

// ErrUnsupported is what an *UnsupportedError is (errors.Is).
var ErrUnsupported = errors.New("unsupported Content-Encoding")

// UnsupportedError is a Content-Encoding this server does not decode.
type UnsupportedError struct{ Value string }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("Content-Encoding %s is not supported: send the body as identity, gzip or deflate (one coding, not a list)", strconv.Quote(e.Value))
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// ParseContentEncoding reads a request's Content-Encoding header value:
// absent, empty or "identity" is Identity; "gzip" (or "x-gzip") and
// "deflate", in any case and with surrounding spaces, are Gzip and Deflate.
func ParseContentEncoding(v []byte) (Coding, error) {
	t := bytes.TrimSpace(v)
	switch {
	case len(t) == 0 || bytes.EqualFold(t, []byte("identity")):
		return Identity, nil
	case bytes.EqualFold(t, []byte("gzip")) || bytes.EqualFold(t, []byte("x-gzip")):
		return Gzip, nil
	case bytes.EqualFold(t, []byte("deflate")):
		return Deflate, nil
	}
	return Identity, &UnsupportedError{Value: string(v)}
}

// Negotiate picks the response coding for an Accept-Encoding header value
// as Triton does: among identity, deflate and gzip, the one with the
// highest q (default 1), the first listed on a tie; identity when the
// header is absent or accepts none of them with q > 0.
func Negotiate(accept []byte) Coding {
	best, bestQ := Identity, 0.0
	for len(accept) > 0 {
		var item []byte
		item, accept, _ = bytes.Cut(accept, []byte(","))
		c, q, ok := acceptItem(item)
		if ok && q > bestQ {
			best, bestQ = c, q
		}
	}
	return best
}

// acceptItem reads one "coding[;q=v]" element; ok is false for a coding
// it does not know or a malformed q.
func acceptItem(item []byte) (c Coding, q float64, ok bool) {
	name, params, _ := bytes.Cut(item, []byte(";"))
	name = bytes.TrimSpace(name)
	switch {
	case bytes.EqualFold(name, []byte("gzip")):
		c = Gzip
	case bytes.EqualFold(name, []byte("deflate")):
		c = Deflate
	case bytes.EqualFold(name, []byte("identity")):
		c = Identity
	default:
		return 0, 0, false
	}
	q = 1
	if p := bytes.TrimSpace(params); len(p) > 0 {
		v, found := bytes.CutPrefix(p, []byte("q="))
		if !found {
			return 0, 0, false
		}
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
		if err != nil {
			return 0, 0, false
		}
		q = f
	}
	return c, q, true
}
