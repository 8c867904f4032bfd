package grpcfront

import (
	"context"

	"github.com/supervisor-dev/supervisor/internal/budget"
)

// Budget is the shared bound on request bytes the master holds
// (limits.max_body_bytes_in_flight, the front's body budget:
// admission.Bodies), which the messages being received (see h2conn.Wire), the
// RPCs' metadata (metacost.go) and the answers held (answerhold.go) are
// charged to. Each charge is an internal/budget Charge, given back by its
// Release, once, whoever calls it.
//
//   - ReserveBody takes n bytes for a message of n bytes, or refuses at
//     once (budget.ErrBusy, *budget.TooLargeError).
//   - WaitBody waits its turn for them, first come first served across
//     the server's connections (a large message first in line gets the
//     room freed before the smaller ones that would take it: the large
//     lane is a budget Heir), until ctx ends or gone (nil: none) says so.
//   - ReserveAnswer takes n bytes for an answer held until the client
//     has read it, which may hold at most the large bodies' share: a
//     client that never reads must not take the room kept for small
//     request bodies.
type Budget interface {
	ReserveBody(n int64) (*budget.Charge, error)
	WaitBody(ctx context.Context, n int64, gone func() error) (*budget.Charge, error)
	ReserveAnswer(n int64) (*budget.Charge, error)
}
