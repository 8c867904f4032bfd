package autoscale

import (
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Sampler measures the prep stage since its previous call. Policy is read
// at every tick, so a reload's bounds and windows apply at once; ok false
// means autoscaling is off in the config now.
type Sampler interface {
	Sample(now time.Time) (Sample, error)
	Policy() (p Policy, ok bool)
}

// Pool is the prep pool as the Scaler resizes it.
type Pool interface {
	// Resize brings the pool to n workers (new ones booted, surplus ones
	// retired in the master's retire order) and returns when it serves
	// them. It returns an error wrapping ErrPaused when the master cannot
	// resize now (a reload, an upgrade or a stop).
	Resize(n int, reason string) error
}

// ErrPaused: the pool cannot be resized now; the decision is dropped and
// sampling starts again afterwards.
var ErrPaused = errors.New("autoscaling paused")

// State is what status shows of the autoscaler (the bounds are the
// config's).
type State struct {
	// Last is the last decision carried out or attempted; Error says why
	// it failed ("" when it did not).
	Last  *Decision
	Error string
	// Ups and Downs count the resizes done since the master started.
	Ups, Downs uint64
}

// Scaler runs the Decider against a Sampler and resizes a Pool.
type Scaler struct {
	sampler Sampler
	pool    Pool
	log     zerolog.Logger
	decider Decider

	mu    sync.Mutex
	state State

	stop     chan struct{}
	stopOnce sync.Once
}

// New returns a Scaler; Run starts it.
func New(s Sampler, p Pool, log zerolog.Logger) *Scaler {
	return &Scaler{sampler: s, pool: p, log: log, stop: make(chan struct{})}
}

// Stop ends Run; safe to call more than once, from any goroutine.
func (sc *Scaler) Stop() { sc.stopOnce.Do(func() { close(sc.stop) }) }

// Run samples at the policy's interval until Stop, and resizes the pool
// as the Decider says. It returns only after Stop; a resize in progress
// is finished first.
func (sc *Scaler) Run() {
	idle := time.Second // the wait while autoscaling is off
	for {
		wait := idle
		if p, ok := sc.sampler.Policy(); ok {
			wait = p.Interval
		}
		t := time.NewTimer(wait)
		select {
		case <-sc.stop:
			t.Stop()
			return
		case now := <-t.C:
			sc.Tick(now)
		}
	}
}

// Tick takes one sample and acts on it; Run calls it at every interval.
func (sc *Scaler) Tick(now time.Time) {
	p, ok := sc.sampler.Policy()
	if !ok {
		sc.decider.Reset()
		return
	}
	s, err := sc.sampler.Sample(now)
	if err != nil {
		sc.log.Debug().Err(err).Msg("autoscale: no sample; the window starts again")
		sc.decider.Reset()
		return
	}
	d := sc.decider.Observe(p, s)
	if d.Direction == None {
		return
	}
	sc.act(d)
}

// act resizes the pool as d says and records the outcome.
func (sc *Scaler) act(d Decision) {
	err := sc.pool.Resize(d.To, d.Reason)
	if errors.Is(err, ErrPaused) {
		sc.decider.Reset()
		sc.log.Info().Str("direction", string(d.Direction)).Err(err).Msg("autoscale: decision dropped")
		return
	}
	log := sc.log.Info()
	if err != nil {
		log = sc.log.Error().Err(err)
	}
	log.Str("direction", string(d.Direction)).Int("from", d.From).Int("to", d.To).Str("reason", d.Reason).Msg("autoscale: prep pool resized")
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.state.Last, sc.state.Error = &d, ""
	if err != nil {
		sc.state.Error = err.Error()
		return
	}
	if d.Direction == Up {
		sc.state.Ups++
	} else {
		sc.state.Downs++
	}
}

// State returns what status shows; safe from any goroutine.
func (sc *Scaler) State() State {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	st := sc.state
	if st.Last != nil {
		last := *st.Last
		st.Last = &last
	}
	return st
}
