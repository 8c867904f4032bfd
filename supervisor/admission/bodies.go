package admission

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/internal/osmem"
)

// Bodies is the master's body budget (limits.max_body_bytes_in_flight):
// the one internal/budget both fronts charge what they hold of a
// request or its answer. A body reserves its declared Content-Length
// when its header arrives, before a byte of it is read, and gives it
// back when it is answered; a chunked body, a gRPC message, a decode
// or decompression, an answer held until its client reads it, each is
// a Charge in one of its lanes. So the master's memory for bodies is
// bounded by configuration, whatever clients declare or send.
//
// Its lanes:
//
//   - all: every charge, within the limit;
//   - small: bodies of up to SmallBodyBytes, bounded by all only;
//   - large: larger bodies and the answers, within seven eighths of the
//     limit, so that clients that declare huge bodies and never send
//     them, or never read their answers, leave the last eighth to small
//     bodies while body_timeout and write_timeout cut them. It is a
//     Heir lane: a large gRPC message waiting first for room gets the
//     room freed before the small ones that would take it the moment it
//     frees (budget.Lane.Heir);
//   - answers: within large, the answers held (counted apart for tests
//     and metrics).
//
// The limit is read from the configuration at each use and set on the
// lanes (budget.SetRoom) when a reload changed it.
type Bodies struct {
	b                          *budget.Budget
	all, small, large, answers *budget.Lane
	burst                      osmem.Gauge
	mu                         sync.Mutex   // orders SetLimit
	limit                      atomic.Int64 // the limit in force; -1 before the first
}

// SmallBodyBytes is the largest body that may use the share of the budget
// kept for small requests.
const SmallBodyBytes = 1 << 20

// bodyBurst: bursts of bodies below this are left to the Go scavenger.
const bodyBurst = 64 << 20

// NewBodies is a body budget of limit bytes.
func NewBodies(limit int64) *Bodies {
	b := &Bodies{}
	b.all = &budget.Lane{Name: "bodies", Burst: &b.burst, BurstBytes: bodyBurst}
	b.small = &budget.Lane{Name: "small bodies", Within: b.all}
	b.large = &budget.Lane{Name: "large bodies", Within: b.all, Heir: true}
	b.answers = &budget.Lane{Name: "answers", Within: b.large}
	b.b = budget.New(b.all, b.small, b.large, b.answers)
	b.limit.Store(-1)
	b.SetLimit(limit)
	return b
}

// SetLimit makes limit the budget's bytes (a reload changed
// limits.max_body_bytes_in_flight); what is held stays held.
func (b *Bodies) SetLimit(limit int64) {
	if b.limit.Load() == limit {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.SetRoom(b.all, limit)
	b.b.SetRoom(b.large, limit-limit/8)
	b.limit.Store(limit)
}

// Limit is the budget's bytes.
func (b *Bodies) Limit() int64 { return b.limit.Load() }

// Lane is the lane of a body total bytes long: small or large.
func (b *Bodies) Lane(total int64) *budget.Lane {
	if total > SmallBodyBytes {
		return b.large
	}
	return b.small
}

// Answers is the lane of the answers held until written.
func (b *Bodies) Answers() *budget.Lane { return b.answers }

// Reserve takes n bytes of a body total bytes long at once, or refuses
// (budget.Reserve).
func (b *Bodies) Reserve(n, total int64) (*budget.Charge, error) {
	return b.b.Reserve(n, b.Lane(total))
}

// Wait is Reserve that waits its turn in its lane (budget.Wait).
func (b *Bodies) Wait(ctx context.Context, n int64, gone func() error) (*budget.Charge, error) {
	return b.b.Wait(ctx, n, b.Lane(n), gone)
}

// ReserveAnswer takes n bytes for an answer held until its client reads
// it, in the answers lane whatever its size: answers wait on a client,
// and one that never reads must not reach the eighth kept for small
// request bodies. Counted as small, answers of up to 1 MiB let one such
// client fill the whole budget and refuse every request until
// write_timeout cut it (cmd/hostile grpc-unread-large: 1 MiB answers).
func (b *Bodies) ReserveAnswer(n int64) (*budget.Charge, error) {
	return b.b.Reserve(n, b.answers)
}

// InUse is the number of bytes held now.
func (b *Bodies) InUse() int64 { return b.all.State().Bytes }

// Large is the part of InUse held by large bodies and answers.
func (b *Bodies) Large() int64 { return b.large.State().Bytes }

// Waiting is the number of charges waiting for room.
func (b *Bodies) Waiting() int {
	return b.small.State().Waiting + b.large.State().Waiting + b.answers.State().Waiting
}
