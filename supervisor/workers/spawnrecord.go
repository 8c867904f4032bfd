package workers

import (
	"github.com/supervisor-dev/supervisor/worker"
)

// start spawns a worker for spec in a claimed scoreboard record
// (supervisor/board), reads what it was at work on once it is reaped
// (crashlog.go), then releases the record.
func (s Spawner) Start(spec worker.Spec) (*Process, error) {
	rec := s.Board.Claim(&spec)
	p, err := s.spawnThen(spec, func(p *Process) { p.atWork, p.atWorkRead = s.Board.AtWork(rec) })
	if err != nil {
		s.Board.Release(rec)
		return nil, err
	}
	p.record = rec
	s.Board.Started(rec, p.PID())
	if rec.Claimed() {
		go func() {
			<-p.exited
			s.Board.Release(rec)
		}()
	}
	return p, nil
}
