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
