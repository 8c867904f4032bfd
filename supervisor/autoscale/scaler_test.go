package autoscale

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// fakeSampler serves a constant load on the pool's current size.
type fakeSampler struct {
	pool *fakePool
	load float64
	on   bool
	err  error
}

func (f *fakeSampler) Sample(now time.Time) (Sample, error) {
	n := f.pool.n
	return Sample{At: now, Workers: n, Load: f.load, CPUs: float64(n), CPUsLess: float64(max(n-1, 1)), IdleNext: 1}, f.err
}

func (f *fakeSampler) Policy() (Policy, bool) { return policy, f.on }

// fakePool resizes at once, or refuses with err.
type fakePool struct {
	n       int
	err     error
	reasons []string
}

func (f *fakePool) Resize(n int, reason string) error {
	if f.err != nil {
		return f.err
	}
	f.n = n
	f.reasons = append(f.reasons, reason)
	return nil
}

func ticks(sc *Scaler, from, to int) {
	for i := from; i < to; i++ {
		sc.Tick(t0.Add(time.Duration(i) * time.Second))
	}
}

func TestScalerResizesAndReports(t *testing.T) {
	pool := &fakePool{n: 1}
	sampler := &fakeSampler{pool: pool, load: 10, on: true}
	sc := New(sampler, pool, zerolog.Nop())
	ticks(sc, 0, 20)
	st := sc.State()
	if pool.n != 3 || st.Ups != 2 || st.Downs != 0 {
		t.Fatalf("after a heavy load: pool %d, state %+v; want 3 workers, 2 ups", pool.n, st)
	}
	if st.Last == nil || st.Last.Direction != Up || st.Last.To != 3 || st.Last.Reason != pool.reasons[1] {
		t.Errorf("last decision %+v, want the up to 3 with the reason the pool was given", st.Last)
	}
	sampler.load = 0
	ticks(sc, 20, 60)
	if st := sc.State(); pool.n != 1 || st.Downs != 2 {
		t.Errorf("after the load stopped: pool %d, %d downs; want 1 worker, 2 downs", pool.n, st.Downs)
	}
}

func TestScalerPausedAndFailedResizes(t *testing.T) {
	pool := &fakePool{n: 1, err: fmt.Errorf("reload in progress: %w", ErrPaused)}
	sampler := &fakeSampler{pool: pool, load: 10, on: true}
	sc := New(sampler, pool, zerolog.Nop())
	ticks(sc, 0, 10)
	if st := sc.State(); st.Last != nil || st.Ups != 0 {
		t.Errorf("state after paused resizes: %+v, want no decision recorded", st)
	}
	pool.err = errors.New("prep-1 failed to boot")
	ticks(sc, 10, 13)
	if st := sc.State(); st.Last == nil || st.Error != "prep-1 failed to boot" || st.Ups != 0 {
		t.Errorf("state after a failed resize: %+v, want the decision with its error, no up counted", st)
	}
}

func TestScalerOffOrUnsampled(t *testing.T) {
	pool := &fakePool{n: 1}
	sampler := &fakeSampler{pool: pool, load: 10}
	sc := New(sampler, pool, zerolog.Nop())
	ticks(sc, 0, 10)
	if pool.n != 1 || sc.State().Last != nil {
		t.Errorf("autoscaling off: pool %d, state %+v; want 1 worker, no decision", pool.n, sc.State())
	}
	sampler.on, sampler.err = true, errors.New("board unreadable")
	ticks(sc, 10, 20)
	if pool.n != 1 {
		t.Errorf("pool resized to %d on failed samples, want 1", pool.n)
	}
}

func TestScalerRunStops(t *testing.T) {
	pool := &fakePool{n: 1}
	sc := New(&fakeSampler{pool: pool}, pool, zerolog.Nop())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc.Run()
	}()
	sc.Stop()
	sc.Stop()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of Stop")
	}
}
