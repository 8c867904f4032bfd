package prepload

import (
	"errors"
	"time"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/procinfo"
	"github.com/supervisor-dev/supervisor/supervisor/autoscale"
	"github.com/supervisor-dev/supervisor/supervisor/board"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// Meter measures the prep stage's load from one sample to the next. Its
// state belongs to the autoscaler's goroutine.
type Meter struct {
	// ProcRoot is where /proc is ("" = /proc).
	ProcRoot string
	prev     stageReading // the previous sample's reading; zero before the first
}

// Pool is the prep pool as the master sees it at a sample.
type Pool struct {
	Board   *board.Board          // the scoreboard (nil: none, and no sample)
	Config  func() *config.Config // the config in force, its plan placed
	Workers func() int            // the prep workers now
	// NextCPUs are the CPUs the plan would give a pool of n+1 prep
	// workers' last one; false when that does not fit the host.
	NextCPUs func(cfg *config.Config, n int) (affinity.CPUSet, bool)
}

// stageReading is what the scoreboard and /proc/stat said at one time.
type stageReading struct {
	at time.Time
	// prepS and inferS are the latency sums, in seconds, of every request
	// the prep and the infer workers finished since the master started.
	prepS, inferS float64
	idle          map[int]float64 // per CPU, idle seconds since boot
}

// errFirstSample: a load is a difference, so the first reading only sets
// the baseline.
var errFirstSample = errors.New("first reading: no interval to measure yet")

// Sample measures the prep stage of p since the previous call (see the
// autoscale package for what the load means).
func (s *Meter) Sample(now time.Time, p Pool) (autoscale.Sample, error) {
	cur, err := s.read(now, p.Board)
	if err != nil {
		s.prev = stageReading{}
		return autoscale.Sample{}, err
	}
	prev := s.prev
	s.prev = cur
	dt := now.Sub(prev.at).Seconds()
	if prev.at.IsZero() || dt <= 0 {
		return autoscale.Sample{}, errFirstSample
	}
	cfg := p.Config()
	n := p.Workers()
	inPrep := max(0, (cur.prepS-prev.prepS)-(cur.inferS-prev.inferS))
	smp := autoscale.Sample{At: now, Workers: n, Load: inPrep / dt,
		CPUs: poolCPUs(Assignments(cfg.Planned), n), CPUsLess: poolCPUs(Assignments(cfg.Planned), n-1)}
	if next, ok := p.NextCPUs(cfg, n); ok {
		for _, c := range next.Slice() {
			smp.IdleNext += max(0, cur.idle[c]-prev.idle[c]) / dt
		}
	}
	return smp, nil
}

// read takes the latency sums and the CPUs' idle times now.
func (s *Meter) read(now time.Time, b *board.Board) (stageReading, error) {
	if b == nil {
		return stageReading{}, errors.New("no scoreboard to measure the prep stage from")
	}
	_, slots, totals := b.Snapshot()
	for _, sl := range slots {
		totals.Add(sl)
	}
	idle, err := procinfo.CPUIdle(s.ProcRoot)
	if err != nil {
		return stageReading{}, err
	}
	return stageReading{at: now, prepS: totals.Role("prep").Latency.Sum, inferS: totals.Role("infer").Latency.Sum, idle: idle}, nil
}

// Assignments are the prep workers of a plan, in index order.
func Assignments(p *affinity.Placement) []affinity.Assignment {
	var out []affinity.Assignment
	if p == nil {
		return nil
	}
	for _, a := range p.Workers {
		if a.Role == affinity.RolePrep {
			out = append(out, a)
		}
	}
	return out
}

// poolCPUs is how many CPUs the first n prep workers can keep busy at
// once: their CPUs summed, but never more than the CPUs they share
// (workers placed with overcommit float over the same CPUs).
func poolCPUs(as []affinity.Assignment, n int) float64 {
	var sum int
	var union affinity.CPUSet
	for _, a := range as[:min(max(n, 0), len(as))] {
		sum += a.CPUs.Count()
		union = union.Union(a.CPUs)
	}
	return float64(min(sum, union.Count()))
}
