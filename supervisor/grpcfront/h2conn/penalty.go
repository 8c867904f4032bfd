package h2conn

import (
	"container/list"
	"net"
	"sync"
	"time"
)

// penaltyBox slows down the new connections of a client address whose
// connections were closed for misbehaviour (too many streams ended
// before their message: HTTP/2 rapid reset; pings too often, which
// grpc-go answers GOAWAY; an answer not taken within the write
// timeout). Closing such a connection alone costs an attacker
// nothing: it redials and gets a fresh budget, so each connection still
// costs the master its budget of header decodes and handler goroutines
// (at ~18,600 resets/s, most of two cores). Once struck, an address gets
// one new connection per wait, refused at accept before any HTTP/2 is
// read (an accept, a small write, a close); each new strike doubles the
// wait (base to 16 x base), and an address with no strike for twice the
// longest wait is forgotten.
//
// Only new connections are refused: the address's established ones,
// which may be well-behaved clients behind the same address (a NAT, or
// every local client on 127.0.0.1), keep serving. A client behind that
// address that opens a new connection meanwhile is refused with GOAWAY
// (UNAVAILABLE, retried with backoff by gRPC clients): the price of
// sharing an address with an attacker, and why the penalty is small.
//
// The table is bounded (maxEntries, least recently struck dropped
// first): addresses beyond it go unpenalised rather than grow the
// master's memory with an attacker's address count.
type penaltyBox struct {
	base       time.Duration // 0: off
	maxEntries int
	now        func() time.Time

	mu  sync.Mutex
	m   map[string]*list.Element // of *penalty
	lru list.List                // most recently struck first
}

type penalty struct {
	host string
	wait time.Duration // between two admitted connections
	next time.Time     // the next connection admitted from then on
	last time.Time     // the last strike
}

// Penalty bounds: the wait doubles up to maxPenaltyDoublings times, and
// the table holds at most penaltyEntries addresses.
const (
	maxPenaltyDoublings = 4
	penaltyEntries      = 4096
)

func newPenaltyBox(base time.Duration, maxEntries int) *penaltyBox {
	return &penaltyBox{base: base, maxEntries: maxEntries, now: time.Now, m: map[string]*list.Element{}}
}

// hostOf is the address a connection's penalty is kept by: its IP, so
// that every source port of a client shares it.
func hostOf(a net.Addr) string {
	s := a.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}

// strike records that a connection of host was closed for misbehaviour.
func (b *penaltyBox) strike(host string) {
	if b == nil || b.base <= 0 {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.lookup(host, now)
	if p == nil {
		p = &penalty{host: host}
		b.m[host] = b.lru.PushFront(p)
		if b.lru.Len() > b.maxEntries {
			b.forget(b.lru.Back())
		}
	} else {
		b.lru.MoveToFront(b.m[host])
	}
	p.wait = min(max(2*p.wait, b.base), b.base<<maxPenaltyDoublings)
	p.next, p.last = now.Add(p.wait), now
}

// admit reports whether a new connection of host may be served now; an
// admitted one uses up the wait.
func (b *penaltyBox) admit(host string) bool {
	if b == nil || b.base <= 0 {
		return true
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.lookup(host, now)
	if p == nil {
		return true
	}
	if now.Before(p.next) {
		return false
	}
	p.next = now.Add(p.wait)
	return true
}

// lookup is host's penalty, nil when it has none or it has decayed
// (then it is forgotten). Called with mu held.
func (b *penaltyBox) lookup(host string, now time.Time) *penalty {
	e := b.m[host]
	if e == nil {
		return nil
	}
	p := e.Value.(*penalty)
	if now.Sub(p.last) > 2*(b.base<<maxPenaltyDoublings) {
		b.forget(e)
		return nil
	}
	return p
}

func (b *penaltyBox) forget(e *list.Element) {
	delete(b.m, e.Value.(*penalty).host)
	b.lru.Remove(e)
}

// size is the number of addresses held.
func (b *penaltyBox) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lru.Len()
}
