package respredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
)

// A Redis that lies, or a man in the middle, is not held to GETRANGE's
// bound: go-redis allocates whatever length a reply declares before it
// reads a byte of it ("$536870912" costs 512 MB; a larger claim ends the
// process), and reads a simple line whole however long. guardedConn
// checks the replies as they arrive, under go-redis's reader: a declared
// length, an aggregate count or a line longer than the bounds below is a
// read error, so go-redis drops the connection and the lookup is a miss.

// Bounds on a reply beyond the largest value asked for (Client.maxValue).
const (
	// replySlack is what a reply may hold beyond that value: the
	// connection handshake's (HELLO, CLIENT SETINFO) answers.
	replySlack = 64 << 10
	// maxAggregate bounds an array's, map's or set's declared count; our
	// commands get none but the handshake's map.
	maxAggregate = 1024
	// maxElements bounds the counts a connection's aggregates declare
	// together, over its life: go-redis allocates each aggregate's slots
	// (16 bytes an element) when it reads the count line, before its
	// elements, so arrays nested in the handshake's map ("*1024\r\n"
	// again and again) cost 16 KiB for every 7 bytes without it. A real
	// server's handshake declares a few dozen; a connection past it is
	// dropped and the next lookup dials a fresh one.
	maxElements = 8 * maxAggregate
)

// errReplyTooLarge is a reply over the bounds, refused before go-redis
// allocates for it.
var errReplyTooLarge = errors.New("redis reply larger than any value the response cache reads; dropping the connection (is the server a real Redis?)")

// guardDialer wraps dial's connections in guardedConns bounded by max.
func guardDialer(dial func(context.Context, string, string) (net.Conn, error), max *atomic.Int64) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &guardedConn{Conn: conn, s: respScanner{max: max}}, nil
	}
}

// guardedConn is a connection whose replies are checked by a respScanner.
type guardedConn struct {
	net.Conn
	s respScanner
}

func (c *guardedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if serr := c.s.scan(p[:n]); serr != nil {
		return 0, serr
	}
	return n, err
}

// respScanner follows the RESP stream's framing (RESP2 and RESP3) byte by
// byte, without buffering, and checks each line and declared length.
type respScanner struct {
	max     *atomic.Int64 // the largest value asked for
	state   scanState
	kind    byte  // the current line's type byte
	n       int64 // the length line's number so far, or the line's length
	neg     bool  // the length line's number is -1
	payload int64 // bytes of a bulk payload (and its CRLF) still to skip
	elems   int64 // the counts the connection's aggregates declared
}

type scanState uint8

const (
	lineStart scanState = iota // expecting a type byte
	inLength                   // in a length line: digits up to '\n'
	inLine                     // in any other line, up to '\n'
	inPayload                  // skipping a bulk payload
)

// scan checks b, the next bytes of the stream.
func (s *respScanner) scan(b []byte) error {
	for i := 0; i < len(b); i++ {
		switch s.state {
		case lineStart:
			s.start(b[i])
		case inLength:
			if err := s.length(b[i]); err != nil {
				return err
			}
		case inLine:
			if b[i] == '\n' {
				s.state = lineStart
			} else if s.n++; s.n > s.limit() {
				return fmt.Errorf("%w: a line of over %d bytes", errReplyTooLarge, s.limit())
			}
		case inPayload:
			skip := min(s.payload, int64(len(b)-i))
			s.payload -= skip
			i += int(skip) - 1
			if s.payload == 0 {
				s.state = lineStart
			}
		}
	}
	return nil
}

// start reads a line's type byte.
func (s *respScanner) start(c byte) {
	s.kind, s.n, s.neg = c, 0, false
	switch c {
	case '$', '!', '=', '*', '%', '~', '>', '|':
		s.state = inLength
	default:
		s.state = inLine
	}
}

// length reads one byte of a length line, and at its end checks the
// length against the bounds.
func (s *respScanner) length(c byte) error {
	switch {
	case c >= '0' && c <= '9':
		if s.n = s.n*10 + int64(c-'0'); s.n > 1<<40 {
			return fmt.Errorf("%w: a length of over 2^40", errReplyTooLarge)
		}
		return nil
	case c == '-' && s.n == 0:
		s.neg = true
		return nil
	case c == '\r':
		return nil
	case c != '\n':
		return fmt.Errorf("%w: a length line with %q", errReplyTooLarge, c)
	}
	s.state = lineStart
	switch {
	case s.neg: // -1: a null, nothing follows
	case s.kind == '$' || s.kind == '!' || s.kind == '=':
		if s.n > s.limit() {
			return fmt.Errorf("%w: a string of %d bytes", errReplyTooLarge, s.n)
		}
		s.payload, s.state = s.n+2, inPayload
	case s.n > maxAggregate:
		return fmt.Errorf("%w: an aggregate of %d elements", errReplyTooLarge, s.n)
	default:
		if s.elems += s.n; s.elems > maxElements {
			return fmt.Errorf("%w: aggregates declaring %d elements on one connection", errReplyTooLarge, s.elems)
		}
	}
	return nil
}

// limit is the longest string or line accepted now.
func (s *respScanner) limit() int64 { return s.max.Load() + replySlack }
