package grpcfront

import (
	"time"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/supervisor-dev/supervisor/supervisor/grpcfront/h2conn"
)

// An answer of chargedAnswerMin or less is not charged, but it is bounded
// as a charged one is: gRPC queues it on its connection and the RPC ends
// (for the handler, and for grpc.max_concurrent_streams) at once, so a
// client that gives no window could otherwise keep opening RPCs and
// leave every answer queued, for ever (grpc.max_connections x as many
// RPCs as it cares to open x 64 KiB). The codec encodes it into a pooled
// buffer whose release, when gRPC has written it or dropped it with its
// stream, stops a timer of Timeouts.Write; a timer that fires closes the
// connection, which gives back what it queued.

// boundAnswer is a message to send within write of its encoding, on
// conn; the interceptors wrap what a handler sends in it, the codec
// unwraps it.
type boundAnswer struct {
	msg   any
	conn  *h2conn.Entry
	write time.Duration
	timer *time.Timer
}

// bound wraps msg in its write bound, or is msg when there is no bound
// (no timeout, or a connection not tracked) or nothing to send.
func (t Timeouts) bound(msg any, conn *h2conn.Entry) any {
	if msg == nil || t.Write <= 0 || conn == nil {
		return msg
	}
	return &boundAnswer{msg: msg, conn: conn, write: t.Write}
}

// unbound is msg without its bound, and the bound (nil: none).
func unbound(msg any) (any, *boundAnswer) {
	if b, ok := msg.(*boundAnswer); ok {
		return b.msg, b
	}
	return msg, nil
}

// marshal encodes m into a pooled buffer (over the size gRPC pools, so
// that its release is seen) and starts the bound, stopped by the
// buffer's release (Put).
func (b *boundAnswer) marshal(m proto.Message) (mem.BufferSlice, error) {
	size := proto.Size(m)
	buf := mem.DefaultBufferPool().Get(max(size, minPooledAnswer))
	out, err := proto.MarshalOptions{}.MarshalAppend((*buf)[:0], m)
	if err != nil {
		mem.DefaultBufferPool().Put(buf)
		return nil, err
	}
	*buf = out
	b.timer = time.AfterFunc(b.write, b.expire)
	return mem.BufferSlice{mem.NewBuffer(buf, b)}, nil
}

// minPooledAnswer is the smallest buffer gRPC's mem.NewBuffer counts
// references of (one at its pooling threshold it treats as a plain
// slice, whose release is not seen).
const minPooledAnswer = 1<<10 + 1

// expire closes the connection of an answer not written in time, unless
// it has closed meanwhile (gRPC frees no buffer queued on a connection
// that ends, so the timer of its answers fires anyway).
func (b *boundAnswer) expire() {
	if !b.conn.Gone() {
		b.conn.Close()
	}
}

// Get is gRPC's pool's: gRPC only gives this buffer back (Put).
func (b *boundAnswer) Get(n int) *[]byte { return mem.DefaultBufferPool().Get(n) }

// Put is gRPC done with the answer: written, or dropped with its stream.
func (b *boundAnswer) Put(buf *[]byte) {
	b.timer.Stop()
	mem.DefaultBufferPool().Put(buf)
}

var _ mem.BufferPool = (*boundAnswer)(nil)
