// Package budgettest is a body budget for tests that logs what it
// charges and releases, over a real internal/budget.
package budgettest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/supervisor-dev/supervisor/internal/budget"
)

// Ledger is a body budget (grpcfront.Budget) over a real
// internal/budget of Limit bytes (0: no limit) that records what is
// reserved (+n) and released (-n). A release is seen at the Ledger's
// next reservation or Log, and logged then, in the order the charges
// were made.
type Ledger struct {
	Limit  int64
	once   sync.Once
	b      *budget.Budget
	lane   *budget.Lane
	mu     sync.Mutex
	live   []*budget.Charge // charged, not yet seen released
	events []string
}

func (l *Ledger) init() {
	l.once.Do(func() {
		room := l.Limit
		if room == 0 {
			room = 1 << 62
		}
		l.lane = &budget.Lane{Name: "ledger", Room: room}
		l.b = budget.New(l.lane)
	})
}

// seenLocked logs the releases of the live charges.
func (l *Ledger) seenLocked() {
	l.live = slices.DeleteFunc(l.live, func(c *budget.Charge) bool {
		if c.Bytes() > 0 {
			return false
		}
		l.events = append(l.events, fmt.Sprintf("-%d", chargeSize(c)))
		return true
	})
}

// took logs c, a charge of n bytes, or counts a refusal.
func (l *Ledger) took(c *budget.Charge, n int64, err error) (*budget.Charge, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seenLocked()
	if err != nil {
		return nil, err
	}
	if n > 0 {
		l.live = append(l.live, c)
		sizes.Store(c, n)
		l.events = append(l.events, fmt.Sprintf("+%d", n))
	}
	return c, nil
}

// sizes is each live charge's size, for the log of its release.
var sizes sync.Map

func chargeSize(c *budget.Charge) int64 {
	n, _ := sizes.LoadAndDelete(c)
	return n.(int64)
}

func (l *Ledger) ReserveBody(n int64) (*budget.Charge, error) {
	l.init()
	c, err := l.b.Reserve(n, l.lane)
	return l.took(c, n, err)
}

func (l *Ledger) WaitBody(ctx context.Context, n int64, gone func() error) (*budget.Charge, error) {
	l.init()
	c, err := l.b.Wait(ctx, n, l.lane, gone)
	return l.took(c, n, err)
}

func (l *Ledger) ReserveAnswer(n int64) (*budget.Charge, error) { return l.ReserveBody(n) }

// Log is the charges (+n) and releases (-n) seen, in order.
func (l *Ledger) Log() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seenLocked()
	return strings.Join(l.events, " ")
}

// ClearLog sees the releases, then empties the log (a benchmark's
// rounds each charge and give back the same bytes).
func (l *Ledger) ClearLog() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seenLocked()
	l.events = l.events[:0]
}

// InUse is the bytes charged now.
func (l *Ledger) InUse() int64 {
	l.init()
	return l.lane.State().Bytes
}

// Waiting is the charges waiting for room.
func (l *Ledger) Waiting() int {
	l.init()
	return l.lane.State().Waiting
}
