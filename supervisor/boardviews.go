package supervisor

import (
	"time"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/supervisor/board"
	"github.com/supervisor-dev/supervisor/supervisor/status"
)

// scrape reads the board, the master's state and the GPUs.
func (m *Master) scrape(gpus []affinity.GPUUsage) status.Scrape {
	s := status.Scrape{Status: m.status(), Ops: m.history.opCounts(), LB: m.proxy.Stats(), GPUs: gpus, Bodies: m.front.BodyCounts(),
		Caches: m.caches.Stats(), Poison: m.front.PoisonStats()}
	if m.tracing != nil {
		ts := m.tracing.Tracer.Stats()
		s.Tracing = &ts
	}
	var retired status.Totals
	s.Header, s.Slots, retired = m.board.Snapshot()
	s.Totals = retired
	for _, sl := range s.Slots {
		s.Totals.Add(sl)
	}
	return s
}

// arenasStuck is status.ArenasStuck of this master's scoreboard now.
func (m *Master) arenasStuck() string {
	h, slots, _ := m.board.Snapshot()
	return status.ArenasStuck(h, slots, time.Now())
}

// servingRecords are the scoreboard records of the processes that serve
// now, both pools.
func (m *Master) servingRecords() []board.Record {
	var rs []board.Record
	for _, s := range append(m.infer.list(), m.prep.list()...) {
		if p := s.Serving(); p != nil {
			rs = append(rs, p.Record())
		}
	}
	return rs
}
