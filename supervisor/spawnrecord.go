package supervisor

import (
	"github.com/supervisor-dev/supervisor/supervisor/board"
	"github.com/supervisor-dev/supervisor/worker"
)

// start spawns a worker for spec in a claimed scoreboard record
// (supervisor/board), reads what it was at work on once it is reaped
// (crashlog.go), then releases the record.
func (s spawner) start(spec worker.Spec) (*process, error) {
	rec := s.board.Claim(&spec)
	p, err := s.spawnThen(spec, func(p *process) { p.atWork, p.atWorkRead = s.board.AtWork(rec) })
	if err != nil {
		s.board.Release(rec)
		return nil, err
	}
	p.record = rec
	s.board.Started(rec, p.pid())
	if rec.Claimed() {
		go func() {
			<-p.exited
			s.board.Release(rec)
		}()
	}
	return p, nil
}

// servingRecords are the scoreboard records of the processes that serve
// now, both pools.
func (m *Master) servingRecords() []board.Record {
	var rs []board.Record
	for _, s := range append(m.infer.list(), m.prep.list()...) {
		if p := s.serving(); p != nil {
			rs = append(rs, p.record)
		}
	}
	return rs
}
