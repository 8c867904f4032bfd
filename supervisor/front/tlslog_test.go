package front

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestLoggerTLSHandshakeAtDebug: fasthttp's report of a failed TLS
// handshake is debug (any client could flood the log at warn); its
// other reports stay warn.
func TestLoggerTLSHandshakeAtDebug(t *testing.T) {
	var buf bytes.Buffer
	l := Logger(zerolog.New(&buf).Level(zerolog.InfoLevel))
	l.Printf("error when serving connection %q<->%q: %v", "a", "b", "tls: first record does not look like a TLS handshake")
	if buf.Len() != 0 {
		t.Fatalf("a TLS handshake failure logged above debug: %s", buf.String())
	}
	l.Printf("error when serving connection %q<->%q: %v", "a", "b", "cannot read request")
	if !strings.Contains(buf.String(), `"level":"warn"`) {
		t.Fatalf("another error not at warn: %q", buf.String())
	}
}
