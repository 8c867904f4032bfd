package admission

import "testing"

func TestDeclaresLength(t *testing.T) {
	for raw, want := range map[string]bool{
		"Host: x\r\nContent-Length: 5\r\n":          true,
		"host: x\ncontent-length:5":                 true,
		"CONTENT-LENGTH: 5\r\nHost: x\r\n":          true,
		"Host: x\r\nX-Content-Length: 5\r\n":        false,
		"Content-Lengths: 5\r\n":                    false,
		"X-Note: Content-Length: 5\r\n":             false,
		"Transfer-Encoding: chunked\r\nHost: x\r\n": false,
		"": false,
	} {
		if got := DeclaresLength([]byte(raw)); got != want {
			t.Errorf("DeclaresLength(%q) = %v, want %v", raw, got, want)
		}
	}
}
