package h2conn

import "sync"

// Answer is an answer held on a connection until gRPC is done with its
// bytes (grpcfront's answerhold.go); Release gives its charge back, once,
// however often it is called.
type Answer interface{ Release() }

// answerSet is a connection's answers charged and not yet written: its
// closing gives them back (gRPC frees no buffer of a stream still queued
// when its connection ends).
type answerSet struct {
	mu   sync.Mutex
	m    map[Answer]struct{}
	gone bool
}

// Keep adds h, or reports false once the connection has closed (nil: a
// connection not tracked, which keeps nothing).
func (e *Entry) Keep(h Answer) bool {
	if e == nil {
		return true
	}
	s := &e.answers
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return false
	}
	if s.m == nil {
		s.m = map[Answer]struct{}{}
	}
	s.m[h] = struct{}{}
	return true
}

// Forget removes h, released.
func (e *Entry) Forget(h Answer) {
	if e == nil {
		return
	}
	e.answers.mu.Lock()
	delete(e.answers.m, h)
	e.answers.mu.Unlock()
}

// Gone reports whether the connection has closed (dropAnswers ran).
func (e *Entry) Gone() bool {
	if e == nil {
		return true
	}
	e.answers.mu.Lock()
	defer e.answers.mu.Unlock()
	return e.answers.gone
}

// dropAnswers releases every answer the closed connection still holds.
func (e *Entry) dropAnswers() {
	if e == nil {
		return
	}
	s := &e.answers
	s.mu.Lock()
	s.gone = true
	held := s.m
	s.m = nil
	s.mu.Unlock()
	for h := range held {
		h.Release()
	}
}
