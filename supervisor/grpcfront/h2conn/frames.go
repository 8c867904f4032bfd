package h2conn

import (
	"encoding/binary"

	"golang.org/x/net/http2"
)

// frameHeader is an HTTP/2 frame's 9-byte header.
type frameHeader struct {
	length uint32
	typ    http2.FrameType
	flags  http2.Flags
	stream uint32
}

// frameVisitor is told what a frameCursor finds: each frame's header,
// then its payload in runs as the bytes arrive, then its end.
type frameVisitor interface {
	header(h frameHeader)
	payload(h frameHeader, b []byte)
	end(h frameHeader)
}

// frameCursor follows the frame boundaries of one direction of an
// HTTP/2 connection over the byte runs it is fed, however they split
// frames: it copies nothing but a header's 9 bytes. It does not check
// the frames: gRPC reads them, and closes the connection on any it
// rejects.
type frameCursor struct {
	skip int // bytes still to pass over before the first frame (the client preface)
	hdr  [9]byte
	hdrN int
	cur  frameHeader
	left uint32 // payload bytes of cur still to come; 0 with hdrN < 9: between frames
}

// feed walks p, telling v what it finds.
func (c *frameCursor) feed(p []byte, v frameVisitor) {
	if c.skip > 0 {
		k := min(c.skip, len(p))
		c.skip -= k
		p = p[k:]
	}
	for len(p) > 0 {
		if c.hdrN < len(c.hdr) {
			k := copy(c.hdr[c.hdrN:], p)
			c.hdrN += k
			p = p[k:]
			if c.hdrN < len(c.hdr) {
				return
			}
			c.cur = parseFrameHeader(c.hdr)
			c.left = c.cur.length
			v.header(c.cur)
		}
		k := uint32(min(uint64(c.left), uint64(len(p))))
		if k > 0 {
			v.payload(c.cur, p[:k])
			c.left -= k
			p = p[k:]
		}
		if c.left == 0 {
			c.hdrN = 0
			v.end(c.cur)
		}
	}
}

func parseFrameHeader(b [9]byte) frameHeader {
	return frameHeader{
		length: uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]),
		typ:    http2.FrameType(b[3]),
		flags:  http2.Flags(b[4]),
		stream: binary.BigEndian.Uint32(b[5:]) & (1<<31 - 1),
	}
}

// endsStream reports whether h ends its stream for its sender: a reset,
// or a HEADERS or DATA frame with END_STREAM.
func endsStream(h frameHeader) bool {
	switch h.typ {
	case http2.FrameRSTStream:
		return true
	case http2.FrameHeaders, http2.FrameData:
		return h.flags.Has(http2.FlagHeadersEndStream) // same bit as FlagDataEndStream
	}
	return false
}
