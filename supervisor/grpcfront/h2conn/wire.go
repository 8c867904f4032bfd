package h2conn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/net/http2"

	"github.com/supervisor-dev/supervisor/internal/budget"
)

// Wire charges the gRPC messages in assembly on one connection to the
// Budget by the length each one's 5-byte prefix declares, as an HTTP
// body is charged its Content-Length: gRPC opens a stream's window to
// that length once a handler asks for the message, so neither window
// bounds it. It reads the connection's bytes as gRPC reads them (Read),
// before gRPC sees them: the client preface, the frame headers and,
// inside DATA frames, the messages' prefixes; nothing is copied. It
// needs the plaintext HTTP/2 the listener serves (no TLS: under it, this
// would have to sit above the handshake).
//
// A declared length up to max is reserved when its prefix is complete
// and given back when the message's last byte is read (the message is
// then whole in gRPC's buffer, handed to the handler, whose HTTP request
// the front charges as a body), when its stream ends (the client's
// END_STREAM or RST_STREAM, the server's trailers or RST_STREAM: see
// wrote), or when the connection closes. A stream past the last one the
// server's GOAWAY keeps is not charged at all: gRPC ignores it silently
// (no reset, no trailers), while the streams it keeps hold the
// connection open. A longer one is refused by gRPC
// from its prefix: its bytes are passed over, uncharged.
//
// A reservation that does not fit is owed (pending): the bytes already
// read go to gRPC, so it sees the streams' headers (and refuses those it
// refuses, which ends their debts), and the next Read waits before it
// reads the socket (await), so the connection's reader stops taking
// bytes from it and TCP pushes back on that client alone, until every
// debt is charged, or its stream ends, or wait passes; Read then fails,
// and gRPC closes the connection, giving back all it held. The messages
// owing wait their turn in the budget (Budget.WaitBody), first come
// first served across the server's connections: the first large one
// gets the room given back before the smaller messages and bodies that
// would take it as it frees, so they do not starve it. What a message
// owing its charge brings in the meantime is the rest of one read (32
// KiB, grpc-go's read buffer). The wait holds up the connection's other
// streams too: when what fills the budget is this connection's own
// messages, interleaved with the one that waits, they cannot finish,
// and only the wait's end (or their own message timeouts) ends them
// (TestInterleavedMessagesOverTheBudgetEndAtTheMessageTimeout). Only
// holding back that one stream's window would avoid it, and gRPC opens
// it to the whole message, out of reach here.
//
// The reader state (cursor, pad) is the reader goroutine's; streams is
// shared with gRPC's writer (the server ending a stream) and Close,
// under mu. The reader holds mu while it scans bytes it has and while it
// tries a reservation, never while it reads the socket or waits.
type Wire struct {
	b    Budget
	max  int64
	wait time.Duration // longest wait for room (grpcfront's Timeouts.Message; 0: until Close)

	in    frameCursor // the client's frames
	out   frameCursor // the server's frames (gRPC's writer goroutine)
	pad   int         // DATA frame being read: its message bytes left; -1: its pad length is next
	away  [4]byte     // the last stream id of the GOAWAY being written (out's)
	awayN int

	mu      sync.Mutex
	streams map[uint32]*wireStream // the client's open streams
	pending []uint32               // streams whose message's charge is owed, in order
	last    uint32                 // the last stream gRPC processes (its GOAWAY's)
	closed  bool
	ctx     context.Context // a wait for room's; cancelled by close
	cancel  context.CancelCauseFunc
}

// wireStream is one stream's message in assembly.
type wireStream struct {
	prefix  [5]byte
	prefixN int                     // bytes of the next message's prefix read
	left    int64                   // bytes of the current message still to come
	charge  *budget.Charge          // held for the current message
	owed    int64                   // to be charged for the current message (see pending)
	stop    context.CancelCauseFunc // ends the wait for what it owes, while one runs
}

// errNoRoom fails a connection's Read when a message's declared length
// found no room in the budget within the wait.
var errNoRoom = errors.New("a gRPC message found no room in limits.max_body_bytes_in_flight within limits.body_timeout: " +
	"the connection is closed; raise the budget or send smaller messages")

// errStreamEnded ends the wait of a stream that ended meanwhile.
var errStreamEnded = errors.New("the stream ended")

// errWireClosed fails a Read that waited for room when the connection
// was closed under it.
var errWireClosed = errors.New("gRPC connection closed while a message waited for room in limits.max_body_bytes_in_flight")

// NewWire charges b the messages of one connection (nil b: nil, which
// charges nothing).
func NewWire(b Budget, max int64, wait time.Duration) *Wire {
	if b == nil {
		return nil
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Wire{b: b, max: max, wait: wait, in: frameCursor{skip: len(http2.ClientPreface)},
		streams: map[uint32]*wireStream{}, last: 1<<31 - 1, ctx: ctx, cancel: cancel}
}

// read scans p, the bytes just read from the client, before gRPC gets
// them; an error means the connection must close.
func (w *Wire) read(p []byte) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errWireClosed
	}
	w.in.feed(p, (*wireIn)(w))
	return nil
}

// wrote scans p, bytes gRPC wrote to the client: a stream the server
// ended takes no more of its client's bytes, so its charge is given back.
func (w *Wire) wrote(p []byte) {
	if w == nil {
		return
	}
	w.out.feed(p, (*wireOut)(w))
}

// close gives back everything the connection holds; later reads fail.
func (w *Wire) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	w.cancel(errWireClosed)
	for id := range w.streams {
		w.endLocked(id)
	}
}

// endLocked forgets stream id, giving back its charge.
func (w *Wire) endLocked(id uint32) {
	if s := w.streams[id]; s != nil {
		s.charge.Release()
		s.charge = nil // the reader may still hold s: nothing left to give back
		w.unowe(s)
		delete(w.streams, id)
	}
}

// await charges the messages owed, in order, each waiting with mu
// unlocked for its turn in the budget (see Wire); a stream that ends
// meanwhile owes nothing.
func (w *Wire) await() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var deadline time.Time
	for len(w.pending) > 0 {
		s := w.streams[w.pending[0]]
		if s == nil || s.owed == 0 {
			w.pending = w.pending[1:]
			continue
		}
		if w.closed {
			return errWireClosed
		}
		if deadline.IsZero() && w.wait > 0 {
			deadline = time.Now().Add(w.wait)
		}
		if err := w.waitLocked(s, deadline); err != nil {
			return err
		}
	}
	return nil
}

// waitLocked waits, mu unlocked meanwhile, until s has its charge,
// or its stream ends (nil, s owes nothing), or the wire closes, or
// deadline (zero: none) passes.
func (w *Wire) waitLocked(s *wireStream, deadline time.Time) error {
	ctx, stop := context.WithCancelCause(w.ctx)
	defer stop(nil)
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	n := s.owed
	s.stop = stop
	w.mu.Unlock()
	c, err := w.b.WaitBody(ctx, n, nil)
	w.mu.Lock()
	s.stop = nil
	switch {
	case w.closed:
		c.Release()
		return errWireClosed
	case s.owed != n: // its stream ended meanwhile
		c.Release()
		return nil
	case errors.Is(err, budget.ErrTooLarge): // a budget made smaller than the largest message
		return fmt.Errorf("a gRPC message could never fit limits.max_body_bytes_in_flight (%w): "+
			"the connection is closed; raise the budget to twice max_body_bytes or more", err)
	case err != nil:
		return errNoRoom
	}
	s.charge, s.owed = c, 0
	return nil
}

// unowe forgets what s owes, ending its wait.
func (w *Wire) unowe(s *wireStream) {
	s.owed = 0
	if s.stop != nil {
		s.stop(errStreamEnded)
	}
}

// wireIn is the wire seen as the visitor of the client's frames.
type wireIn Wire

func (v *wireIn) header(h frameHeader) {
	w := (*Wire)(v)
	switch {
	case h.typ == http2.FrameData:
		v.pad = int(h.length)
		if h.flags.Has(http2.FlagDataPadded) {
			v.pad = -1
		}
	case h.typ == http2.FrameHeaders && !endsStream(h):
		if w.streams[h.stream] == nil && h.stream <= w.last {
			w.streams[h.stream] = &wireStream{}
		}
	case endsStream(h): // a reset, or trailers: a message in assembly is cut
		w.endLocked(h.stream)
	}
}

func (v *wireIn) payload(h frameHeader, b []byte) {
	if h.typ != http2.FrameData {
		return
	}
	if v.pad < 0 { // the pad length: the frame's last b[0] bytes are not data
		v.pad = max(int(h.length)-1-int(b[0]), 0)
		b = b[1:]
	}
	k := min(v.pad, len(b))
	v.pad -= k
	w := (*Wire)(v)
	if s := w.streams[h.stream]; s != nil && k > 0 {
		w.message(h.stream, s, b[:k])
	}
}

func (v *wireIn) end(h frameHeader) {
	if h.typ == http2.FrameData && endsStream(h) {
		(*Wire)(v).endLocked(h.stream)
	}
}

// message follows stream id's message bytes b: prefixes, charged (or
// owed) when complete, and the messages' bytes, their charge given back
// at the last.
func (w *Wire) message(id uint32, s *wireStream, b []byte) {
	for len(b) > 0 {
		if s.left == 0 {
			k := copy(s.prefix[s.prefixN:], b)
			s.prefixN += k
			b = b[k:]
			if s.prefixN < len(s.prefix) {
				return
			}
			s.prefixN = 0
			s.left = int64(binary.BigEndian.Uint32(s.prefix[1:]))
			if s.left > 0 && s.left <= w.max {
				w.charge(id, s)
			}
			continue
		}
		k := min(s.left, int64(len(b)))
		s.left -= k
		b = b[k:]
		if s.left == 0 {
			s.charge.Release()
			s.charge = nil
			w.unowe(s)
		}
	}
}

// charge charges stream id its new message of s.left bytes, or owes it.
func (w *Wire) charge(id uint32, s *wireStream) {
	if c, err := w.b.ReserveBody(s.left); err == nil {
		s.charge = c
		return
	}
	s.owed = s.left
	w.pending = append(w.pending, id)
}

// wireOut is the wire seen as the visitor of the server's frames.
type wireOut Wire

func (v *wireOut) header(h frameHeader) {
	if endsStream(h) { // gRPC's trailers or reset: it reads no more of the stream
		w := (*Wire)(v)
		w.mu.Lock()
		w.endLocked(h.stream)
		w.mu.Unlock()
	}
}

func (v *wireOut) payload(h frameHeader, b []byte) {
	if h.typ == http2.FrameGoAway && v.awayN < len(v.away) {
		v.awayN += copy(v.away[v.awayN:], b)
	}
}

// end ends, at the server's GOAWAY, the streams past the last one it
// keeps: gRPC ignores them.
func (v *wireOut) end(h frameHeader) {
	if h.typ != http2.FrameGoAway {
		return
	}
	whole := v.awayN == len(v.away)
	v.awayN = 0
	if !whole {
		return
	}
	w := (*Wire)(v)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = min(w.last, binary.BigEndian.Uint32(v.away[:])&(1<<31-1))
	for id := range w.streams {
		if id > w.last {
			w.endLocked(id)
		}
	}
}
