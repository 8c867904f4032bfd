package supervisor

import (
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker"
)

// board is the master's side of the shared-memory scoreboard. Each master
// has its own board file (shm.PathFor its pid), so during an upgrade the
// new master never replaces the board the old one's workers still write;
// the CLI finds the serving master's board through the pid file.
//
// A slot belongs to one worker process, from spawn to reaped exit: a
// recycle or a reload's surge runs two processes for one worker position,
// each with its own slot. When a process is reaped its counters are added
// to the retired totals, so the counters /metrics serves never go back.
// A nil *board is valid and records nothing (no /dev/shm).
type board struct {
	log zerolog.Logger

	mu      sync.Mutex
	sb      *shm.Scoreboard // nil once removed
	free    []int           // reusable slots, oldest first
	retired totals
}

// Slot counts: enough for every worker of a config plus surges and reloads
// that grow pools; a board is 2 KiB a slot.
const (
	minBoardSlots  = 64
	slotsPerWorker = 4
)

// openBoard creates this master's board, after removing boards that dead
// masters of the instance left behind (a crash or SIGKILL skips Remove).
func openBoard(runtimeDir string, workers int, generation int64, log zerolog.Logger) *board {
	for pid, path := range shm.Boards(runtimeDir) {
		if pid != os.Getpid() && !shm.ProcessExists(pid) {
			_ = os.Remove(path)
		}
	}
	n := min(max(minBoardSlots, slotsPerWorker*workers), shm.MaxSlots)
	path := shm.PathFor(runtimeDir, os.Getpid())
	sb, err := shm.Create(path, n, os.Getpid(), uint64(generation))
	if err != nil {
		log.Warn().Err(err).Msg("no scoreboard: `supervisor status` and /metrics will show no per-worker counters")
		return nil
	}
	b := &board{log: log, sb: sb, retired: newTotals()}
	for i := range n {
		b.free = append(b.free, i)
	}
	log.Info().Str("scoreboard", path).Int("slots", n).Msg("scoreboard created")
	return b
}

// claim takes a free slot for the process about to be spawned with spec
// and records it in spec; without a free slot the worker runs unreported.
func (b *board) claim(spec *worker.Spec) int {
	if b == nil {
		return -1
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb == nil {
		return -1
	}
	if len(b.free) == 0 {
		b.log.Warn().Str("worker", spec.Name).Msg("scoreboard full: this worker runs unreported")
		return -1
	}
	i := b.free[0]
	b.free = b.free[1:]
	models := make([]string, len(spec.Models))
	for k, m := range spec.Models {
		models[k] = m.Name
	}
	device, cpus := placementOf(spec)
	b.sb.Slot(i).Claim(shm.Identity{
		Role: string(spec.Role), Name: spec.Name, Models: models, Device: device, CPUs: cpus,
		Generation: uint64(spec.Generation), RecycleAfter: uint64(max(spec.MaxRequests, 0)), Spawned: time.Now(),
	})
	spec.Scoreboard, spec.ScoreboardSlot = b.sb.Path(), i
	return i
}

// placementOf is the device and cpuset a spec pins its worker to, for the
// slot's identity; "" when the spec does not say (the CLI then reads the
// process's affinity from /proc).
func placementOf(s *worker.Spec) (device, cpus string) { return s.Device(), s.CPUs }

// started records the pid of the process in slot i.
func (b *board) started(i, pid int) {
	if b == nil || i < 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb != nil {
		b.sb.Slot(i).SetPID(pid)
	}
}

// release returns slot i once its process is reaped (or failed to
// start): its counters join the retired totals and it shows Dead until it
// is claimed again.
func (b *board) release(i int) {
	if b == nil || i < 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb == nil {
		return // removed: the master has stopped
	}
	b.retired.add(b.sb.SlotSnapshot(i))
	b.sb.Slot(i).SetState(shm.Dead)
	b.free = append(b.free, i)
}

// snapshot returns the header, the slots and a copy of the retired
// totals, consistently: a slot released meanwhile is counted once.
func (b *board) snapshot() (shm.Header, []shm.SlotSnapshot, totals) {
	if b == nil {
		return shm.Header{}, nil, newTotals()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb == nil {
		return shm.Header{}, nil, b.retired.clone()
	}
	return b.sb.Header(), b.sb.Snapshot(), b.retired.clone()
}

// stamp records a new generation (a reload) in the header and in the slots
// of the processes that serve it, replaced or kept alike; the ones being
// retired keep their old generation and show as stale.
func (b *board) stamp(generation int64, serving []*process) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb == nil {
		return
	}
	b.sb.SetGeneration(uint64(generation))
	for _, p := range serving {
		if p.spec.Scoreboard == b.sb.Path() {
			b.sb.Slot(p.spec.ScoreboardSlot).SetGeneration(uint64(generation))
		}
	}
}

// remove deletes the board file and unmaps it when the master exits;
// every later call on the board does nothing. Idempotent.
func (b *board) remove() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb == nil {
		return
	}
	if err := b.sb.Remove(); err != nil {
		b.log.Warn().Err(err).Msg("could not remove the scoreboard")
	}
	b.sb = nil
}

// path is the board file, "" once removed or without a board.
func (b *board) path() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb == nil {
		return ""
	}
	return b.sb.Path()
}

// start spawns a worker for spec in a claimed slot, and releases the slot
// when the process is reaped.
func (s spawner) start(spec worker.Spec) (*process, error) {
	i := s.board.claim(&spec)
	p, err := s.spawn(spec)
	if err != nil {
		s.board.release(i)
		return nil, err
	}
	s.board.started(i, p.pid())
	if i >= 0 {
		go func() {
			<-p.exited
			s.board.release(i)
		}()
	}
	return p, nil
}

// servingProcesses are the processes that serve now, both pools.
func (m *Master) servingProcesses() []*process {
	var ps []*process
	for _, s := range append(m.infer.list(), m.prep.list()...) {
		if p := s.serving(); p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}
