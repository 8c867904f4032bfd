package status

import (
	"maps"
	"slices"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// Totals are counters summed over worker processes: per role (requests,
// failures, histograms) and per model (Triton's counters). /metrics
// serves the retired processes' totals plus the live slots', so its
// counters never go back when a worker is recycled or restarted.
type Totals struct {
	roles  map[string]*RoleTotals
	models map[string]*shm.ModelSnapshot
}

// RoleTotals are one pool's counters.
type RoleTotals struct {
	Requests, Errors              uint64
	Latency, QueueTime, BatchSize shm.Histogram
}

// NewTotals returns empty totals.
func NewTotals() Totals {
	return Totals{roles: map[string]*RoleTotals{}, models: map[string]*shm.ModelSnapshot{}}
}

// Add counts a slot's counters. Prep workers write the models' request
// counts and infer workers their queue and compute counters, so summing
// both roles per model gives Triton's statistics with nothing counted
// twice.
func (t Totals) Add(s shm.SlotSnapshot) {
	if s.State == shm.Free || s.State == shm.Dead || s.Role == "" {
		return
	}
	r := t.roles[s.Role]
	if r == nil {
		r = &RoleTotals{}
		t.roles[s.Role] = r
	}
	r.Requests += s.Requests
	r.Errors += s.Errors
	r.Latency = addHistogram(r.Latency, s.Latency)
	r.QueueTime = addHistogram(r.QueueTime, s.QueueTime)
	r.BatchSize = addHistogram(r.BatchSize, s.BatchSize)
	for _, ms := range s.ModelStats {
		m := t.models[ms.Name]
		if m == nil {
			m = &shm.ModelSnapshot{Name: ms.Name}
			t.models[ms.Name] = m
		}
		m.Add(ms)
	}
}

// Clone is a deep copy of t, for a reader outside the board's lock.
func (t Totals) Clone() Totals {
	c := NewTotals()
	for k, r := range t.roles {
		rc := *r
		rc.Latency, rc.QueueTime, rc.BatchSize = addHistogram(shm.Histogram{}, r.Latency),
			addHistogram(shm.Histogram{}, r.QueueTime), addHistogram(shm.Histogram{}, r.BatchSize)
		c.roles[k] = &rc
	}
	for k, m := range t.models {
		mc := *m
		c.models[k] = &mc
	}
	return c
}

// Role returns a pool's totals (zero when it has none).
func (t Totals) Role(name string) RoleTotals {
	if r := t.roles[name]; r != nil {
		return *r
	}
	return RoleTotals{}
}

// Model returns one model's totals (zero when it has none).
func (t Totals) Model(name string) shm.ModelSnapshot {
	if m := t.models[name]; m != nil {
		return *m
	}
	return shm.ModelSnapshot{}
}

// modelNames lists the models counted, sorted.
func (t Totals) modelNames() []string { return slices.Sorted(maps.Keys(t.models)) }

// addHistogram returns a + b; an empty a takes b's bounds.
func addHistogram(a, b shm.Histogram) shm.Histogram {
	if len(b.Counts) == 0 {
		return a
	}
	if len(a.Counts) == 0 {
		a = shm.Histogram{Bounds: b.Bounds, Counts: make([]uint64, len(b.Counts))}
	}
	for i := range a.Counts {
		a.Counts[i] += b.Counts[i]
	}
	a.Sum += b.Sum
	return a
}

// OpCounts count reloads and upgrades by outcome since the master started.
type OpCounts struct {
	ReloadOK, ReloadFailed, UpgradeOK, UpgradeFailed uint64
}

// Count adds one outcome.
func (c *OpCounts) Count(r control.OpResult) {
	switch {
	case r.Op == "upgrade" && r.OK:
		c.UpgradeOK++
	case r.Op == "upgrade":
		c.UpgradeFailed++
	case r.OK:
		c.ReloadOK++
	default:
		c.ReloadFailed++
	}
}
