package lb

import "context"

// ContextClient is a Client that has gone when its context ends, as an
// RPC's does when its client cancels it, its deadline passes or its
// connection dies. Watch calls back the moment the context ends
// (context.AfterFunc), so the upstream connection is closed at once
// rather than at the next ClientPoll, and never fails. A context that
// can never end (context.Background) is watched for nothing.
type ContextClient struct{ Ctx context.Context }

// Watch calls onGone once, on a goroutine of its own, when c.Ctx ends
// (at once if it has ended). The stop it returns waits for an onGone
// under way, as Client requires.
func (c ContextClient) Watch(onGone func()) (stop func(), err error) {
	returned := make(chan struct{})
	cancel := context.AfterFunc(c.Ctx, func() {
		defer close(returned)
		onGone()
	})
	return func() {
		if !cancel() { // onGone has started: wait for it to return
			<-returned
		}
	}, nil
}

// Gone reports whether c.Ctx has ended.
func (c ContextClient) Gone() bool { return c.Ctx.Err() != nil }
