package imageinput

import "encoding/base64"

// Unbase64 returns an element's image bytes: its base64 decoding
// (standard alphabet, padding optional) when it is all base64 text, else
// the element itself. Binary image formats are never all base64 text (a
// JPEG starts with 0xff, a PNG with 0x89), and anything else is left for
// the decoder to name its format.
func Unbase64(e []byte) ([]byte, error) {
	if !isBase64Text(e) {
		return e, nil
	}
	// Unpadded text decodes to more than StdEncoding.DecodedLen says.
	dec := make([]byte, base64.RawStdEncoding.DecodedLen(len(e)))
	n, err := base64.StdEncoding.Decode(dec, e)
	if err != nil {
		var err2 error
		if n, err2 = base64.RawStdEncoding.Decode(dec, e); err2 == nil {
			err = nil
		}
	}
	return dec[:n], err
}

// isBase64Text reports whether e is non-empty and holds only base64
// characters, padding and line breaks.
func isBase64Text(e []byte) bool {
	for _, c := range e {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
			c == '+' || c == '/' || c == '=' || c == '\r' || c == '\n') {
			return false
		}
	}
	return len(e) > 0
}

// Unbase64Prefix is Unbase64 for the start of an element: base64 text is
// decoded as far as whole 4-character groups go; anything else is the
// element's own bytes.
func Unbase64Prefix(e []byte) []byte {
	if !isBase64Text(e) {
		return e
	}
	n := len(e) / 4 * 4
	dec := make([]byte, base64.StdEncoding.DecodedLen(n))
	k, err := base64.StdEncoding.Decode(dec, e[:n])
	if err != nil {
		return nil // line breaks or padding inside: judged whole later
	}
	return dec[:k]
}
