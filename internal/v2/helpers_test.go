package v2

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

func f32Bytes(vs ...float32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// mustDecode decodes a JSON-only request and fails the test on error.
func mustDecode(t *testing.T, body string) *InferRequest {
	t.Helper()
	r, err := DecodeInferRequest([]byte(body), -1)
	if err != nil {
		t.Fatalf("DecodeInferRequest(%s): %v", clipTest(body), err)
	}
	everyPrefixPasses(t, []byte(body), -1, Limits{})
	return r
}

// everyPrefixPasses checks that no prefix of a valid request is refused by
// the prefix decode: each either passes whole or is ErrTruncated.
func everyPrefixPasses(t *testing.T, body []byte, headerLen int, lim Limits) {
	t.Helper()
	for k := 0; k <= len(body); k++ {
		_, err := DecodeInferRequestPrefix(body[:k:k], int64(len(body)), headerLen, lim)
		if err != nil && !errors.Is(err, ErrTruncated) {
			t.Fatalf("the %d-byte prefix of a valid %d-byte request (%s) is refused: %v", k, len(body), clipTest(string(body)), err)
		}
		if k < len(body) && err == nil && len(strings.TrimSpace(string(body[k:]))) > 0 {
			t.Fatalf("the %d-byte prefix of %s passed as a whole request", k, clipTest(string(body)))
		}
	}
}

// wantError checks that err is a 400 *Error whose message contains want.
func wantError(t *testing.T, err error, want string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *Error containing %q", err, err, want)
	}
	if e.Status != 400 {
		t.Errorf("status = %d, want 400 (%s)", e.Status, e.Msg)
	}
	if !strings.Contains(e.Msg, want) {
		t.Errorf("message = %q, want it to contain %q", e.Msg, want)
	}
}

func clipTest(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
