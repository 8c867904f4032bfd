package lb

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// recordingClient records when the lb first asked to watch it.
type recordingClient struct{ asked atomic.Int64 } // ns since epoch; 0: not yet

func (c *recordingClient) Watch(func()) (func(), error) {
	c.asked.CompareAndSwap(0, int64(time.Since(epoch)))
	return func() {}, nil
}

func (c *recordingClient) Gone() bool { return false }

// TestWatchStartsNoSoonerThanItsDelay: the clock starts a watch at
// watchDelay after startWatch or later, never sooner, and within a bound.
func TestWatchStartsNoSoonerThanItsDelay(t *testing.T) {
	c := &recordingClient{}
	start := time.Since(epoch)
	w := startWatch(c)
	defer w.end()
	polltest.Until(t, 10*time.Second, time.Millisecond, "the watch to start", func() bool { return c.asked.Load() != 0 })
	if took := time.Duration(c.asked.Load()) - start; took < watchDelay {
		t.Errorf("the watch started %v after startWatch, want %v or later", took, watchDelay)
	}
}

// TestEndedWatchIsUnlisted: a watch ended before its time is unlisted
// and never acts, and the clock's timer, fired with nothing listed, is
// not armed again.
func TestEndedWatchIsUnlisted(t *testing.T) {
	c := &recordingClient{}
	w := startWatch(c)
	if w.end() {
		t.Error("end reported the client gone")
	}
	watches.mu.Lock()
	listed := w.index
	watches.mu.Unlock()
	if listed != -1 {
		t.Errorf("the ended watch is still listed at %d", listed)
	}
	polltest.Until(t, 10*time.Second, time.Millisecond, "the clock's timer to fire and stay unarmed", func() bool {
		watches.mu.Lock()
		defer watches.mu.Unlock()
		return watches.armed == 0 && len(watches.due) == 0
	})
	if c.asked.Load() != 0 {
		t.Error("an ended watch asked to watch its client")
	}
}

// TestManyPolledWatchesFireTheClockBoundedly: two thousand slow
// requests whose clients can only be polled, started one every 25 us so
// that their polls come due at moments of their own, are each polled, while
// the clock fires at most about once a millisecond, not once per watch.
func TestManyPolledWatchesFireTheClockBoundedly(t *testing.T) {
	const n = 2000
	var polls atomic.Int64
	c := GoneFunc(func() bool { polls.Add(1); return false })
	ws := make([]*watch, 0, n)
	before, start := watches.fires.Load(), time.Now()
	for i := range n {
		// One every 25 us: each watch comes due at a moment of its own.
		for time.Since(start) < time.Duration(i)*25*time.Microsecond {
		}
		ws = append(ws, startWatch(c))
	}
	polltest.Until(t, 20*time.Second, time.Millisecond, "every watch to be polled once", func() bool { return polls.Load() >= n })
	fired, took := watches.fires.Load()-before, time.Since(start)
	t.Logf("the clock fired %d times in %v", fired, took)
	for _, w := range ws {
		if w.end() {
			t.Error("end reported a client gone that never went")
		}
	}
	// A fire per watchSlack (1 ms), and a few more for those armed
	// earlier by add; without the slack, about one per watch.
	if limit := int64(took/time.Millisecond) + 50; fired > limit {
		t.Errorf("the clock fired %d times in %v for %d polled watches, want at most %d (about one per %v)", fired, took, n, limit, watchSlack)
	}
}

// BenchmarkWatchStartEnd is what watching costs a request answered
// before watchDelay: startWatch and end, from 64 goroutines at once.
func BenchmarkWatchStartEnd(b *testing.B) {
	c := GoneFunc(func() bool { return false })
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			startWatch(c).end()
		}
	})
}
