package grpcfront

import (
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Budget is the shared bound on request bytes the master holds
// (limits.max_body_bytes_in_flight, the front's body budget), which the
// messages being received are charged to. ReserveBody takes n bytes, or
// nothing and false when they do not fit; ReleaseBody gives n back.
type Budget interface {
	ReserveBody(n int64) bool
	ReleaseBody(n int64)
}

// errBudget refuses a message that the body budget has no room for; the
// client may retry, as an HTTP client answered 503 Retry-After.
var errBudget = status.Error(codes.ResourceExhausted,
	"server busy: request bodies in flight fill limits.max_body_bytes_in_flight; retry later")

// charge is what one stream holds of the Budget. gRPC gives no hook
// between a message's 5-byte length prefix and its bytes: once a handler
// asks for a message, gRPC opens the stream's flow-control window to the
// length the prefix declares and assembles all of it. So the whole
// largest message (max) is reserved before gRPC may read one (a unary
// RPC's at its header, a stream's at each RecvMsg), and cut down to the
// message's size once it is in: that much stays held until the next
// message or the RPC's end.
type charge struct {
	b    Budget
	max  int64
	held atomic.Int64
}

// newCharge reserves max for a stream's next message; nil (held nothing,
// all methods no-ops) when b is nil.
func newCharge(b Budget, max int64) (*charge, error) {
	if b == nil || max <= 0 {
		return nil, nil
	}
	c := &charge{b: b, max: max}
	return c, c.grow()
}

// grow reserves the largest message again, before a message is read.
func (c *charge) grow() error {
	if c == nil {
		return nil
	}
	n := c.max - c.held.Load()
	if n <= 0 {
		return nil
	}
	if !c.b.ReserveBody(n) {
		return errBudget
	}
	c.held.Add(n)
	return nil
}

// received keeps only the size of m, the message read.
func (c *charge) received(m any) {
	if c == nil {
		return
	}
	size := int64(0)
	if pm, ok := m.(proto.Message); ok {
		size = int64(proto.Size(pm))
	}
	c.shrink(size)
}

// shrink gives back what is held beyond keep.
func (c *charge) shrink(keep int64) {
	if c == nil {
		return
	}
	for {
		held := c.held.Load()
		if held <= keep {
			return
		}
		if c.held.CompareAndSwap(held, keep) {
			c.b.ReleaseBody(held - keep)
			return
		}
	}
}

// release gives back everything held: the RPC is over.
func (c *charge) release() { c.shrink(0) }
