package board

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/status"
	"github.com/supervisor-dev/supervisor/worker"
)

// Board is the master's side of the shared-memory scoreboard. Each master
// has its own board file (shm.PathFor its pid), so during an upgrade the
// new master never replaces the board the old one's workers still write;
// the CLI finds the serving master's board through the pid file.
//
// A record belongs to one worker process, from spawn to reaped exit: a
// recycle or a reload's surge runs two processes for one worker position,
// each with its own record. When a process is reaped its counters are added
// to the retired totals, so the counters /metrics serves never go back.
// A nil *Board is valid and records nothing (no /dev/shm).
//
// The file belongs to the workers' user, who can truncate it under the
// master's mapping. Every access goes through use, under mu, with faults
// turned into errors (shm.Guard): a damaged board is unmapped, counted,
// reported by status and /metrics, and replaced by a fresh one at the
// same path. Records claimed on the damaged board are forgotten (their
// workers fault on their next write, exit and are restarted on the new
// board), and so are their live counters.
type Board struct {
	log     zerolog.Logger
	file    string // where the board is (re)created
	records int
	// chown gives a new board file to the workers' user; nil = keep ours.
	chown func(path string) error

	mu         sync.Mutex
	sb         *shm.Scoreboard // nil once removed, or when it could not be recreated
	generation int64           // the last one stamped, for a recreated board
	logLevel   *zerolog.Level  // the last one set (SetLogLevel), for a recreated board; nil = none
	free       []int           // reusable records, oldest first
	retired    status.Totals
	faults     int    // times the board was found damaged
	lastFault  string // why, and when, the last time
	removed    bool
}

// Record is a claimed record of one board: a record index means nothing on
// the board that replaced a damaged one. The zero value is not a record;
// Claim returns one with index -1 when it claims nothing.
type Record struct {
	sb *shm.Scoreboard
	i  int
}

// Claimed reports whether r is a record (Claim found a free one).
func (r Record) Claimed() bool { return r.i >= 0 }

// Record counts: enough for every worker of a config plus surges and reloads
// that grow pools; a board is 4 KiB a record.
const (
	minBoardRecords  = 64
	recordsPerWorker = 4
)

// Open creates this master's board, after removing boards that dead
// masters of the instance left behind (a crash or SIGKILL skips Remove).
func Open(runtimeDir string, workers int, generation int64, log zerolog.Logger) *Board {
	for pid, path := range shm.Boards(runtimeDir) {
		if pid != os.Getpid() && !shm.ProcessExists(pid) {
			_ = os.Remove(path)
		}
	}
	b := &Board{log: log, file: shm.PathFor(runtimeDir, os.Getpid()), generation: generation, retired: status.NewTotals(),
		records: min(max(minBoardRecords, recordsPerWorker*workers), shm.MaxSlots)}
	if err := b.create(); err != nil {
		log.Warn().Err(err).Msg("no scoreboard: `supervisor status` and /metrics will show no per-worker counters")
		return nil
	}
	log.Info().Str("scoreboard", b.file).Int("slots", b.records).Msg("scoreboard created")
	return b
}

// create makes a fresh board at b.file with every record free. The caller
// holds mu, or is Open.
func (b *Board) create() error {
	sb, err := shm.Create(b.file, b.records, os.Getpid(), uint64(b.generation))
	if err != nil {
		return err
	}
	if b.chown != nil {
		if err := b.chown(b.file); err != nil {
			_ = sb.Remove()
			return err
		}
	}
	if b.logLevel != nil {
		sb.SetLogLevel(int8(*b.logLevel))
	}
	b.sb, b.free = sb, b.free[:0]
	for i := range b.records {
		b.free = append(b.free, i)
	}
	return nil
}

// SetOwner makes chown give the board, now and when it is recreated, to
// the workers' user.
func (b *Board) SetOwner(chown func(path string) error) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.chown = chown
	return chown(b.file)
}

// use runs fn on the live board, with faults of the mapping caught. On a
// fault the board is replaced (damaged) and use reports false, as it does
// when there is no board. The caller holds mu.
func (b *Board) use(fn func(sb *shm.Scoreboard)) bool {
	if b.sb == nil {
		return false
	}
	sb := b.sb
	if err := shm.Guard(func() { fn(sb) }); err != nil {
		b.damaged(err)
		return false
	}
	return true
}

// damaged drops a board whose mapping faulted and creates a fresh one in
// its place. The caller holds mu.
func (b *Board) damaged(err error) {
	b.faults++
	b.lastFault = fmt.Sprintf("%s: %v", time.Now().UTC().Format(time.RFC3339), err)
	_ = b.sb.Close() // unmapping a truncated mapping is fine
	b.sb = nil
	if b.removed {
		return
	}
	if cerr := b.create(); cerr != nil {
		b.lastFault += fmt.Sprintf("; could not recreate it: %v", cerr)
		b.log.Error().Err(err).AnErr("recreate", cerr).Str("scoreboard", b.file).
			Msg("scoreboard damaged (truncated under the master?) and not recreated: workers now run unreported")
		return
	}
	b.log.Error().Err(err).Str("scoreboard", b.file).Int("faults", b.faults).
		Msg("scoreboard damaged (truncated under the master?): recreated; workers on the old one are restarted as they fault")
}

// Fault says how often the board was found damaged, and the last time why.
func (b *Board) Fault() (int, string) {
	if b == nil {
		return 0, ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.faults, b.lastFault
}

// Claim takes a free record for the process about to be spawned with spec
// and records it in spec; without a free record the worker runs unreported.
func (b *Board) Claim(spec *worker.Spec) Record {
	none := Record{i: -1}
	if b == nil {
		return none
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb == nil {
		return none
	}
	if len(b.free) == 0 {
		b.log.Warn().Str("worker", spec.Name).Msg("scoreboard full: this worker runs unreported")
		return none
	}
	i := b.free[0]
	models := make([]string, len(spec.Models))
	for k, m := range spec.Models {
		models[k] = m.Name
	}
	device, cpus := placementOf(spec)
	claimed := b.use(func(sb *shm.Scoreboard) {
		sb.Slot(i).Claim(shm.Identity{
			Role: string(spec.Role), Name: spec.Name, Models: models, Device: device, CPUs: cpus,
			Generation: uint64(spec.Generation), RecycleAfter: uint64(max(spec.MaxRequests, 0)), Spawned: time.Now(),
		})
	})
	if !claimed {
		return none // the board was replaced: the next spawn claims on the new one
	}
	b.free = b.free[1:]
	spec.Scoreboard, spec.ScoreboardSlot = b.sb.Path(), i
	return Record{b.sb, i}
}

// placementOf is the device and cpuset a spec pins its worker to, for the
// record's identity; "" when the spec does not say (the CLI then reads the
// process's affinity from /proc).
func placementOf(s *worker.Spec) (device, cpus string) { return s.Device(), s.CPUs }

// Started records the pid of the process in record bs.
func (b *Board) Started(bs Record, pid int) {
	if b == nil || bs.i < 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb == bs.sb {
		b.use(func(sb *shm.Scoreboard) { sb.Slot(bs.i).SetPID(pid) })
	}
}

// SetModels rewrites the model names of record bs (shm.Slot.SetModels):
// its process's models changed in place.
func (b *Board) SetModels(bs Record, models []string) {
	if b == nil || bs.i < 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb == bs.sb {
		b.use(func(sb *shm.Scoreboard) { sb.Slot(bs.i).SetModels(models) })
	}
}

// Release returns record bs once its process is reaped (or failed to
// start): its counters join the retired status.Totals and it shows Dead until it
// is claimed again. A record of a board since removed or replaced is gone
// with it.
func (b *Board) Release(bs Record) {
	if b == nil || bs.i < 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb == nil || b.sb != bs.sb {
		return
	}
	var snap shm.SlotSnapshot
	if b.use(func(sb *shm.Scoreboard) {
		snap = sb.SlotSnapshot(bs.i)
		sb.Slot(bs.i).SetState(shm.Dead)
	}) {
		b.retired.Add(snap)
		b.free = append(b.free, bs.i)
	}
}

// AtWork reads record bs's work record (shm.Scoreboard.AtWork): read
// once its process is reaped, what it was at work on when it died. False
// when bs is no record of the live board.
func (b *Board) AtWork(bs Record) (shm.AtWork, bool) {
	if b == nil || bs.i < 0 {
		return shm.AtWork{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sb == nil || b.sb != bs.sb {
		return shm.AtWork{}, false
	}
	var a shm.AtWork
	ok := b.use(func(sb *shm.Scoreboard) { a = sb.AtWork(bs.i) })
	return a, ok
}

// Snapshot returns the header, the records and a copy of the retired
// totals, consistently: a record released meanwhile is counted once.
func (b *Board) Snapshot() (shm.Header, []shm.SlotSnapshot, status.Totals) {
	if b == nil {
		return shm.Header{}, nil, status.NewTotals()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var h shm.Header
	var slots []shm.SlotSnapshot
	if !b.use(func(sb *shm.Scoreboard) { h, slots = sb.Header(), sb.Snapshot() }) {
		// No board, or a damaged one just replaced: its records are lost.
		return shm.Header{}, nil, b.retired.Clone()
	}
	return h, slots, b.retired.Clone()
}

// Stamp records a new generation (a reload) in the header and in the
// records of the processes that serve it (serving: their records),
// replaced or kept alike; the ones being retired keep their old
// generation and show as stale.
func (b *Board) Stamp(generation int64, serving []Record) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.generation = generation
	b.use(func(sb *shm.Scoreboard) {
		sb.SetGeneration(uint64(generation))
		for _, r := range serving {
			if r.sb == sb && r.i >= 0 {
				sb.Slot(r.i).SetGeneration(uint64(generation))
			}
		}
	})
}

// SetLogLevel records in the header the level every worker is to log at;
// workers follow it within worker.LogLevelPoll, and workers spawned later
// start at it. A board recreated after damage gets it too (its old
// workers, which fault on their next write, are replaced).
func (b *Board) SetLogLevel(lvl zerolog.Level) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logLevel = &lvl
	b.use(func(sb *shm.Scoreboard) { sb.SetLogLevel(int8(lvl)) })
}

// Remove deletes the board file and unmaps it when the master exits;
// every later call on the board does nothing. Idempotent.
func (b *Board) Remove() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removed = true
	if b.sb == nil {
		return
	}
	if err := b.sb.Remove(); err != nil {
		b.log.Warn().Err(err).Msg("could not remove the scoreboard")
	}
	b.sb = nil
}

// Path is the board file, "" once removed or without a board.
func (b *Board) Path() string {
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
