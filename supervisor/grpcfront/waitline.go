package grpcfront

import (
	"container/list"
	"sync"
)

// waitLine orders the messages waiting for room in the budget across a
// server's connections (see wire), first come first served, so that a
// large message is not starved by smaller ones that keep taking the
// room it needs the moment it frees (a wait that polls loses every such
// race: TestLargeGRPCMessageIsNotStarvedBySmallBodies in front). The
// first in line (the head) claims room in the budget (ClaimBudget): the
// room it lacks is kept from every other message and body, and room
// given back goes to it first, until its whole charge is in; the
// others, and every new message, take their whole charge or nothing, as
// before. The claim is bounded as a large body's charge is (the large
// ones hold at most seven eighths of the budget), so a large head that
// never fills (a hostile client's, behind others holding the seven
// eighths, until Timeouts.Message closes its connection) keeps no small
// message or body out of the eighth kept for them. A small message is
// not a head (the budget gives it no claim): it leaves the line and
// polls, since its room is that eighth.
//
// Its lock is taken under a wire's, never the other way.
type waitLine struct {
	mu sync.Mutex
	q  list.List // of *wireStream
}

// ClaimBudget is a Budget that keeps room for one large message (the
// head of the line) and hands it room as it frees before anyone else:
// see front.ClaimBody. ClaimBody returns nil functions when it gives no
// claim (a small message). A Budget without it leaves every waiting
// message to poll for its whole charge.
type ClaimBudget interface {
	ClaimBody(n, total int64) (settle func() bool, cancel func())
}

// join puts s at the end of the line, unless it is in it.
func (l *waitLine) join(s *wireStream) {
	if l == nil || s.inLine != nil {
		return
	}
	l.mu.Lock()
	s.inLine = l.q.PushBack(s)
	l.mu.Unlock()
}

// leave takes s out of the line, if it is in it.
func (l *waitLine) leave(s *wireStream) {
	if l == nil || s.inLine == nil {
		return
	}
	l.mu.Lock()
	l.q.Remove(s.inLine)
	l.mu.Unlock()
	s.inLine = nil
}

// first reports whether s is the head of the line.
func (l *waitLine) first(s *wireStream) bool {
	if l == nil || s.inLine == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.q.Front() == s.inLine
}
