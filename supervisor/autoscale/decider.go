package autoscale

import (
	"fmt"
	"time"
)

// Policy is what the rules are tuned by (prep.min_workers, max_workers
// and prep.autoscale).
type Policy struct {
	Min, Max int
	// Interval is the time between samples; UpAfter and DownAfter are
	// the windows, each at least one sample.
	Interval, UpAfter, DownAfter, Cooldown time.Duration
	UpBusy, DownBusy                       float64
	MinIdleCPUs                            float64
}

// Sample is the prep stage over one interval.
type Sample struct {
	At time.Time
	// Workers is the prep pool's size when the sample was taken.
	Workers int
	// Load is the average number of requests in the prep stage: by
	// Little's law, the time the requests that finished spent in prep
	// workers less the time they spent in infer workers (the scoreboard's
	// latency sums), over the interval. When the infer stage limits
	// throughput, requests wait there, their time is subtracted and Load
	// stays low however busy the service is, so no CPU worker that would
	// not help is added. The lb does not queue (least connections hands a
	// request on at once), so queuing shows here, inside prep workers.
	Load float64
	// CPUs is how many CPUs the pool runs on; CPUsLess how many it would
	// run on with one worker fewer (its last position gone).
	CPUs, CPUsLess float64
	// IdleNext is how many CPUs' worth of the next worker's CPUs were
	// idle (/proc/stat): a worker on CPUs already busy would only take
	// time from what runs there.
	IdleNext float64
}

// Busy is the load per CPU of the pool.
func (s Sample) Busy() float64 { return s.Load / max(s.CPUs, 1e-9) }

// BusyLess is the load per CPU of the pool with one worker fewer.
func (s Sample) BusyLess() float64 { return s.Load / max(s.CPUsLess, 1e-9) }

// Direction says which way a decision resizes the pool.
type Direction string

const (
	None Direction = ""
	Up   Direction = "up"
	Down Direction = "down"
)

// Decision is the outcome of one sample: which way, to how many workers,
// and why (the signal values behind it).
type Decision struct {
	Direction Direction
	At        time.Time
	From, To  int
	Reason    string
}

// Decider applies the rules to samples. The zero value has seen nothing.
type Decider struct {
	window []Sample // newest last, all with the same Workers
	last   time.Time
}

// Observe adds s and returns the decision it leads to (Direction None
// when nothing changes). A decision restarts the window and the cooldown.
func (d *Decider) Observe(p Policy, s Sample) Decision {
	if n := len(d.window); n > 0 && d.window[n-1].Workers != s.Workers {
		d.window = d.window[:0]
	}
	d.window = append(d.window, s)
	if keep := max(samples(p.UpAfter, p.Interval), samples(p.DownAfter, p.Interval)); len(d.window) > keep {
		d.window = append(d.window[:0], d.window[len(d.window)-keep:]...)
	}
	if !d.last.IsZero() && s.At.Sub(d.last) < p.Cooldown {
		return Decision{}
	}
	dec := d.decide(p, s)
	if dec.Direction != None {
		d.window, d.last = d.window[:0], s.At
	}
	return dec
}

// Reset forgets the window (a sample failed, or the pool was resized by
// someone else); the cooldown stays.
func (d *Decider) Reset() { d.window = d.window[:0] }

// Resized starts the cooldown at t without a decision of its own (a
// reload changed the pool).
func (d *Decider) Resized(t time.Time) { d.window, d.last = d.window[:0], t }

func (d *Decider) decide(p Policy, s Sample) Decision {
	n := s.Workers
	switch {
	case n < p.Min:
		return Decision{Up, s.At, n, p.Min, fmt.Sprintf("%d workers is below min_workers %d", n, p.Min)}
	case n > p.Max:
		return Decision{Down, s.At, n, p.Max, fmt.Sprintf("%d workers is above max_workers %d", n, p.Max)}
	}
	up := samples(p.UpAfter, p.Interval)
	if n < p.Max && d.all(up, func(x Sample) bool { return x.Busy() >= p.UpBusy && x.IdleNext >= p.MinIdleCPUs }) {
		return Decision{Up, s.At, n, n + 1, fmt.Sprintf("prep saturated for %d samples: busy %.2f >= up_busy %.2f (load %.2f requests on %g CPUs), %.2f CPUs idle for the new worker (min_idle_cpus %.2f)",
			up, s.Busy(), p.UpBusy, s.Load, s.CPUs, s.IdleNext, p.MinIdleCPUs)}
	}
	down := samples(p.DownAfter, p.Interval)
	if n > p.Min && d.all(down, func(x Sample) bool { return x.BusyLess() < p.DownBusy }) {
		return Decision{Down, s.At, n, n - 1, fmt.Sprintf("prep idle for %d samples: busy on one worker fewer %.2f < down_busy %.2f (load %.2f requests on %g CPUs)",
			down, s.BusyLess(), p.DownBusy, s.Load, s.CPUsLess)}
	}
	return Decision{}
}

// all reports whether the window holds at least n samples and the last n
// all satisfy ok.
func (d *Decider) all(n int, ok func(Sample) bool) bool {
	if len(d.window) < n {
		return false
	}
	for _, s := range d.window[len(d.window)-n:] {
		if !ok(s) {
			return false
		}
	}
	return true
}

// samples is how many samples of interval make window, at least one.
func samples(window, interval time.Duration) int {
	if interval <= 0 {
		return 1
	}
	return max(int((window+interval-1)/interval), 1)
}
