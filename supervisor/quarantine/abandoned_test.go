package quarantine

import (
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/poison"
	"github.com/supervisor-dev/supervisor/shm"
)

// TestAbandonedRingTakesThoseInFlight: a crash takes the requests sent
// before it whose deadline had not passed, once each; a request abandoned
// after a crash it was in flight at is struck at once, not kept.
func TestAbandonedRingTakesThoseInFlight(t *testing.T) {
	var a abandonedRing
	t0 := time.Now()
	req := func(hash uint64, sent, until time.Duration) abandonedReq {
		return abandonedReq{model: "m", key: poison.Key{Hash: hash}, sent: t0.Add(sent), until: t0.Add(until)}
	}
	for _, r := range []abandonedReq{req(1, 0, 10*time.Second), req(2, 5*time.Second, 10*time.Second), req(3, 0, time.Second)} {
		if a.add(r) {
			t.Fatalf("request %d struck with no crash yet", r.key.Hash)
		}
	}
	got := a.take(Exit{At: t0.Add(2 * time.Second)})
	if len(got) != 1 || got[0].key.Hash != 1 {
		t.Fatalf("a crash at 2s took %+v, want request 1 only (2 was sent later, 3 had expired)", got)
	}
	if again := a.take(Exit{At: t0.Add(6 * time.Second)}); len(again) != 1 || again[0].key.Hash != 2 {
		t.Fatalf("a crash at 6s took %+v, want request 2 only (1 was taken already)", again)
	}
	if !a.add(req(4, 3*time.Second, 10*time.Second)) {
		t.Error("a request abandoned after a crash it was in flight at is not struck at once")
	}
	if a.add(req(5, 7*time.Second, 10*time.Second)) {
		t.Error("a request sent after the last crash is struck")
	}
}

// TestAbandonedRingIsBounded: the ring keeps the last abandonedMax
// requests, the oldest overwritten.
func TestAbandonedRingIsBounded(t *testing.T) {
	var a abandonedRing
	t0 := time.Now()
	for i := range abandonedMax + 10 {
		a.add(abandonedReq{model: "m", key: poison.Key{Hash: uint64(i)}, sent: t0, until: t0.Add(time.Minute)})
	}
	got := a.take(Exit{At: t0.Add(time.Second)})
	if len(got) != abandonedMax {
		t.Fatalf("took %d requests, want %d", len(got), abandonedMax)
	}
	for _, r := range got {
		if r.key.Hash < 10 {
			t.Fatalf("request %d, among the oldest 10, was kept", r.key.Hash)
		}
	}
}

// TestAbandonedRingStrikesOnceUnderRace: hang-ups racing a crash that
// every one of them was in flight at are each struck exactly once,
// either kept and taken by the crash or struck at once by add, never
// both and never neither.
func TestAbandonedRingStrikesOnceUnderRace(t *testing.T) {
	var a abandonedRing
	t0 := time.Now()
	const n = abandonedMax // no overwrite: every one must be accounted for
	struck := make(chan bool, n)
	start := make(chan struct{})
	for i := range n {
		go func() {
			<-start
			struck <- a.add(abandonedReq{model: "m", key: poison.Key{Hash: uint64(i)}, sent: t0, until: t0.Add(time.Minute)})
		}()
	}
	close(start)
	taken := a.take(Exit{At: t0.Add(time.Second)})
	atOnce := 0
	for range n {
		if <-struck {
			atOnce++
		}
	}
	if left := a.take(Exit{At: t0.Add(time.Second)}); len(left) != 0 {
		t.Fatalf("%d requests were kept after the crash they were in flight at, not struck at once", len(left))
	}
	if atOnce+len(taken) != n {
		t.Fatalf("%d struck at once + %d taken by the crash = %d, want %d (each hang-up once)", atOnce, len(taken), atOnce+len(taken), n)
	}
	seen := map[uint64]bool{}
	for _, r := range taken {
		if seen[r.key.Hash] {
			t.Fatalf("request %d taken twice", r.key.Hash)
		}
		seen[r.key.Hash] = true
	}
}

// TestAbandonedRingTakesOnlyThoseAtWork: a crash whose worker's work
// record is known takes only the abandoned requests it was at work on;
// the others stay for the crash of the worker they were on.
func TestAbandonedRingTakesOnlyThoseAtWork(t *testing.T) {
	var a abandonedRing
	t0 := time.Now()
	for tok := uint64(1); tok <= 2; tok++ {
		a.add(abandonedReq{model: "m", key: poison.Key{Hash: tok}, token: tok, sent: t0, until: t0.Add(time.Minute)})
	}
	crash := Exit{At: t0.Add(time.Second), Crashed: true, Read: true, Work: shm.AtWork{Units: map[uint16][]uint64{7: {2, 9}}}}
	if got := a.take(crash); len(got) != 1 || got[0].token != 2 {
		t.Fatalf("a crash at work on token 2 took %+v, want request 2 only", got)
	}
	if got := a.take(Exit{At: t0.Add(2 * time.Second), Crashed: true, Read: true}); len(got) != 0 {
		t.Fatalf("a crash at work on nothing took %+v", got)
	}
	if got := a.take(Exit{At: t0.Add(3 * time.Second), Crashed: true}); len(got) != 1 || got[0].token != 1 {
		t.Fatalf("a crash with nothing known took %+v, want request 1, still in flight", got)
	}
}
