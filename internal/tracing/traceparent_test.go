package tracing

import (
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestTraceparentRoundTrip(t *testing.T) {
	in := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, ok := Parse([]byte(in))
	if !ok || !sc.IsSampled() || !sc.IsRemote() {
		t.Fatalf("Parse(%q) = %v, %v; want a sampled remote context", in, sc, ok)
	}
	if got := string(Append(nil, sc)); got != in {
		t.Fatalf("Append = %q, want %q", got, in)
	}
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("ids = %s %s", sc.TraceID(), sc.SpanID())
	}
}

func TestTraceparentRefusesBadValues(t *testing.T) {
	for _, v := range []string{
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // uppercase
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero span id
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // forbidden version
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xx", // version 00 with more
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	} {
		if sc, ok := Parse([]byte(v)); ok {
			t.Errorf("Parse(%q) = %v, true; want refused", v, sc)
		}
	}
	// A later version may add fields after a '-'.
	if _, ok := Parse([]byte("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later")); !ok {
		t.Error("a later version with more fields was refused")
	}
	sc, _ := Parse([]byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"))
	if sc.IsSampled() || sc.TraceFlags() != trace.TraceFlags(0) {
		t.Error("flags 00 read as sampled")
	}
}
