package tracing

import (
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
)

// Header is the W3C Trace Context header that carries a span's context
// from the client to the master and from each process to the next, over
// the public listener and the workers' Unix sockets alike.
const Header = "traceparent"

// traceparentLen is the length of a version 00 traceparent:
// 2 + 1 + 32 + 1 + 16 + 1 + 2.
const traceparentLen = 55

// Parse reads a traceparent header value. It returns the remote span
// context it names and true, or false when v is not a valid version 00
// value (or a later version's first 55 bytes followed by '-'), an
// all-zero trace or span id, as the W3C spec says to ignore.
func Parse(v []byte) (trace.SpanContext, bool) {
	if len(v) < traceparentLen || (len(v) > traceparentLen && (v[0] == '0' && v[1] == '0' || v[traceparentLen] != '-')) {
		return trace.SpanContext{}, false
	}
	if v[2] != '-' || v[35] != '-' || v[52] != '-' || (v[0] == 'f' && v[1] == 'f') {
		return trace.SpanContext{}, false
	}
	var ver [1]byte
	var tid trace.TraceID
	var sid trace.SpanID
	var flags [1]byte
	if !lowerHex(v[0:2]) || !lowerHex(v[3:35]) || !lowerHex(v[36:52]) || !lowerHex(v[53:55]) {
		return trace.SpanContext{}, false
	}
	_, _ = hex.Decode(ver[:], v[0:2])
	_, _ = hex.Decode(tid[:], v[3:35])
	_, _ = hex.Decode(sid[:], v[36:52])
	_, _ = hex.Decode(flags[:], v[53:55])
	if !tid.IsValid() || !sid.IsValid() {
		return trace.SpanContext{}, false
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, Remote: true,
	}), true
}

// lowerHex reports whether b is lowercase hexadecimal only, as the spec
// requires.
func lowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Append appends sc's traceparent (version 00) to dst.
func Append(dst []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	dst = append(dst, "00-"...)
	dst = hex.AppendEncode(dst, tid[:])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, sid[:])
	dst = append(dst, '-')
	return hex.AppendEncode(dst, []byte{byte(sc.TraceFlags())})
}
