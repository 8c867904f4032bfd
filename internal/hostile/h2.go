package hostile

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// H2 is a hostile HTTP/2 client connection to a gRPC server: it writes
// raw frames (golang.org/x/net/http2's Framer), so it can do what no
// well-behaved client library does: reset streams as soon as it opens
// them, open streams and never send their message, claim a message
// length and trickle it, flood PINGs and SETTINGS, never read answers.
// It is not safe for concurrent writes.
type H2 struct {
	Conn   net.Conn
	Framer *http2.Framer
	next   uint32 // the next client stream id
	hbuf   bytes.Buffer
	henc   *hpack.Encoder
}

// DialH2 connects and writes the client preface and an empty SETTINGS
// frame; it does not wait for the server's. Only a failed connect is an
// error.
func DialH2(ctx context.Context, addr string) (*H2, error) {
	return DialH2From(ctx, "", addr)
}

// DialH2From is DialH2 from the local IP from ("" : the system's
// choice), so that attacks can come from addresses of their own: a
// server that penalises an address then penalises only that attack.
func DialH2From(ctx context.Context, from, addr string) (*H2, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	h := &H2{Conn: c, Framer: http2.NewFramer(c, c), next: 1}
	h.henc = hpack.NewEncoder(&h.hbuf)
	h.Framer.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	// A failed write is not the end: a server may answer and close
	// before the preface is written (a connection over its cap), and its
	// answer is still there to read.
	if _, err := c.Write([]byte(http2.ClientPreface)); err == nil {
		_ = h.Framer.WriteSettings()
	}
	return h, nil
}

// Open opens a gRPC stream calling method ("/pkg.Service/Method") with
// the extra metadata (name, value pairs), and returns its id. The stream
// stays open for a message (no END_STREAM).
func (h *H2) Open(authority, method string, md ...string) (uint32, error) {
	h.hbuf.Reset()
	fields := append([]string{":method", "POST", ":scheme", "http", ":path", method, ":authority", authority,
		"content-type", "application/grpc", "te", "trailers"}, md...)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := h.henc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}); err != nil {
			return 0, err
		}
	}
	id := h.next
	h.next += 2
	return id, h.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.hbuf.Bytes(), EndHeaders: true})
}

// MessagePrefix is gRPC's 5-byte message prefix: not compressed, n bytes
// long. A hostile client may claim any n.
func MessagePrefix(n uint32) []byte {
	p := make([]byte, 5)
	binary.BigEndian.PutUint32(p[1:], n)
	return p
}

// Message frames m as one gRPC message.
func Message(m []byte) []byte { return append(MessagePrefix(uint32(len(m))), m...) }

// End reads frames until stream id ends, or the connection does, and
// says how (see Outcome), or returns the error that ended the connection
// (or the read deadline) first. Other frames are skipped; PINGs are not
// answered.
func (h *H2) End(id uint32) (string, error) {
	for {
		f, err := h.Framer.ReadFrame()
		if err != nil {
			return "", err
		}
		if sid, how := Outcome(f); how != "" && (sid == id || sid == 0 && strings.HasPrefix(how, "goaway")) {
			return how, nil
		}
	}
}

// Outcome says what a frame from the server ends, and how: stream id
// with "grpc CODE" (its trailers' gRPC status, by name; "grpc ?" without
// one), "http STATUS" (refused before gRPC), "rst CODE" (RST_STREAM);
// stream 0 with "goaway CODE" or "pong" (a PING's ack). Other frames
// end nothing: "".
func Outcome(f http2.Frame) (uint32, string) {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		if !f.StreamEnded() {
			return f.StreamID, ""
		}
		if st := f.PseudoValue("status"); st != "" && st != "200" {
			return f.StreamID, "http " + st
		}
		n, err := strconv.Atoi(headerValue(f, "grpc-status"))
		if err != nil {
			return f.StreamID, "grpc ?"
		}
		return f.StreamID, "grpc " + codes.Code(n).String()
	case *http2.RSTStreamFrame:
		return f.StreamID, "rst " + f.ErrCode.String()
	case *http2.GoAwayFrame:
		return 0, "goaway " + f.ErrCode.String()
	case *http2.PingFrame:
		if f.IsAck() {
			return 0, "pong"
		}
	}
	return f.Header().StreamID, ""
}

// GoAway reads frames until the server sends GOAWAY and returns its code
// and debug data, or the error that ended the connection first.
func (h *H2) GoAway() (http2.ErrCode, string, error) {
	for {
		f, err := h.Framer.ReadFrame()
		if err != nil {
			return 0, "", err
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			return g.ErrCode, string(g.DebugData()), nil
		}
	}
}

// Close closes the connection.
func (h *H2) Close() error { return h.Conn.Close() }

func headerValue(f *http2.MetaHeadersFrame, name string) string {
	for _, hf := range f.Fields {
		if hf.Name == name {
			return hf.Value
		}
	}
	return ""
}
