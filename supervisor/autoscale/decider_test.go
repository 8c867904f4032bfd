package autoscale

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// policy: grow after 3 busy samples, shrink after 5 idle ones, 4 s
// cooldown, between 1 and 3 workers.
var policy = Policy{Min: 1, Max: 3, Interval: time.Second, UpAfter: 3 * time.Second, DownAfter: 5 * time.Second,
	Cooldown: 4 * time.Second, UpBusy: 0.9, DownBusy: 0.4, MinIdleCPUs: 0.5}

// at is second i's sample: load requests on workers workers of one CPU
// each, with idle CPUs free for the next.
func at(i, workers int, load, idle float64) Sample {
	return Sample{At: t0.Add(time.Duration(i) * time.Second), Workers: workers, Load: load,
		CPUs: float64(workers), CPUsLess: float64(max(workers-1, 1)), IdleNext: idle}
}

// feed observes samples of a constant load from second from to second
// to (excluded) and returns the decisions made, with the pool resized as
// they say.
func feed(d *Decider, p Policy, workers *int, from, to int, load, idle float64) []Decision {
	var out []Decision
	for i := from; i < to; i++ {
		if dec := d.Observe(p, at(i, *workers, load, idle)); dec.Direction != None {
			out = append(out, dec)
			*workers = dec.To
		}
	}
	return out
}

func TestDeciderGrowsAfterASustainedWindow(t *testing.T) {
	var d Decider
	n := 1
	if got := feed(&d, policy, &n, 0, 2, 2, 1); len(got) != 0 {
		t.Fatalf("decisions after 2 busy samples of 3: %+v, want none", got)
	}
	got := feed(&d, policy, &n, 2, 3, 2, 1)
	if len(got) != 1 || got[0].Direction != Up || got[0].From != 1 || got[0].To != 2 {
		t.Fatalf("decisions at the 3rd busy sample: %+v, want one up from 1 to 2", got)
	}
	if r := got[0].Reason; !strings.Contains(r, "busy 2.00 >= up_busy 0.90") || !strings.Contains(r, "1.00 CPUs idle") {
		t.Errorf("reason %q does not give the signal values", r)
	}
}

func TestDeciderNeedsEverySampleOfTheWindow(t *testing.T) {
	var d Decider
	n := 1
	// busy, busy, a dip, busy, busy: never 3 in a row.
	for i, load := range []float64{2, 2, 0.5, 2, 2} {
		if dec := d.Observe(policy, at(i, n, load, 1)); dec.Direction != None {
			t.Fatalf("sample %d: decision %+v, want none (the dip broke the window)", i, dec)
		}
	}
}

func TestDeciderNeedsIdleCPUs(t *testing.T) {
	var d Decider
	n := 1
	if got := feed(&d, policy, &n, 0, 10, 5, 0.2); len(got) != 0 {
		t.Errorf("decisions with 0.2 CPUs idle (min 0.5): %+v, want none", got)
	}
}

func TestDeciderCooldownAndMax(t *testing.T) {
	var d Decider
	n := 1
	got := feed(&d, policy, &n, 0, 20, 10, 1)
	if len(got) != 2 || n != 3 {
		t.Fatalf("decisions under a heavy load: %+v (pool %d), want two ups to max_workers 3", got, n)
	}
	// First at second 2 (3 samples); the next needs the cooldown (4 s) and
	// a fresh window (3 samples after the resize): second 6.
	if gap := got[1].At.Sub(got[0].At); gap != 4*time.Second {
		t.Errorf("second grow %s after the first, want 4s (cooldown)", gap)
	}
}

func TestDeciderShrinksWithHysteresis(t *testing.T) {
	var d Decider
	n := 3
	// 0.9 requests on 3 CPUs: 0.3 busy, but 0.45 on 2: not idle enough.
	if got := feed(&d, policy, &n, 0, 20, 0.9, 1); len(got) != 0 {
		t.Fatalf("decisions at 0.45 busy on one worker fewer: %+v, want none (down_busy 0.4)", got)
	}
	got := feed(&d, policy, &n, 20, 40, 0, 1)
	if len(got) != 2 || n != 1 || got[0].Direction != Down {
		t.Fatalf("decisions with no load: %+v (pool %d), want two downs to min_workers 1", got, n)
	}
	if gap := got[0].At.Sub(t0.Add(20 * time.Second)); gap != 4*time.Second {
		t.Errorf("first shrink %s into the idle period, want 4s (the 5th idle sample)", gap)
	}
	if got := feed(&d, policy, &n, 40, 60, 0, 1); len(got) != 0 {
		t.Errorf("decisions at min_workers: %+v, want none", got)
	}
}

func TestDeciderWindowRestartsWithAnotherSize(t *testing.T) {
	var d Decider
	d.Observe(policy, at(0, 1, 2, 1))
	d.Observe(policy, at(1, 1, 2, 1))
	// The pool changed under it (a reload): samples of 1 worker say
	// nothing about 2.
	if dec := d.Observe(policy, at(2, 2, 4, 1)); dec.Direction != None {
		t.Errorf("decision on the first sample of a new size: %+v, want none", dec)
	}
}

func TestDeciderBackIntoBounds(t *testing.T) {
	var d Decider
	dec := d.Observe(policy, at(0, 5, 0, 0))
	if dec.Direction != Down || dec.To != 3 {
		t.Errorf("decision with 5 workers, max 3: %+v, want down to 3", dec)
	}
}
