package lb

import (
	"context"
	"errors"
)

// ContextClient is a Client that has gone when its context is cancelled,
// as an RPC's is when its client cancels it or its connection dies.
// Watch calls back the moment that happens (context.AfterFunc), so the
// upstream connection is closed at once rather than at the next
// ClientPoll, and never fails. A context that can never end
// (context.Background) is watched for nothing.
//
// A context whose deadline passes has not gone: the request's own
// deadline (the one DoRouteFor is given, from the same timeout) answers
// it as timed out (504, DEADLINE_EXCEEDED), as it answers an HTTP request
// with X-Request-Timeout. Taking the deadline as a hang-up made the
// outcome of one timeout a race between two clocks: 504 or an
// abandoned, client-closed request, whichever fired first.
type ContextClient struct{ Ctx context.Context }

// Watch calls onGone once, on a goroutine of its own, when c.Ctx is
// cancelled (at once if it has been). The stop it returns waits for an
// onGone under way, as Client requires.
func (c ContextClient) Watch(onGone func()) (stop func(), err error) {
	returned := make(chan struct{})
	cancel := context.AfterFunc(c.Ctx, func() {
		defer close(returned)
		if c.Gone() {
			onGone()
		}
	})
	return func() {
		if !cancel() { // the callback has started: wait for it to return
			<-returned
		}
	}, nil
}

// Gone reports whether c.Ctx has ended other than by its deadline.
func (c ContextClient) Gone() bool {
	err := c.Ctx.Err()
	return err != nil && !errors.Is(err, context.DeadlineExceeded)
}
