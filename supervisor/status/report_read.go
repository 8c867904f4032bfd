package status

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// Reader takes Reports of the instance behind a runtime dir, from
// outside the master: the CLI's `status`. It asks the master on the
// control socket and reads the master's scoreboard itself, so a master too
// busy to answer still gets a report from the board. Successive Reads
// measure CPU% between them (`status --watch`).
type Reader struct {
	RuntimeDir string
	// Timeout bounds the control socket exchange.
	Timeout time.Duration
	// GPUs lists device usage; nil means NVML (none on hosts without it).
	GPUs interface {
		Usage() ([]affinity.GPUUsage, error)
	}

	cpu *CPUSampler
}

// cpuWindow is how long a first Read measures CPU% over.
const cpuWindow = 250 * time.Millisecond

// Read takes one report. It fails only when neither the control socket
// nor a scoreboard of a live master answers.
func (sr *Reader) Read() (*Report, error) {
	// Its pid file names the board to read: only a trusted dir's.
	if err := control.TrustedDir(sr.RuntimeDir); err != nil {
		return nil, err
	}
	in := reportInput{}
	resp, ctlErr := control.Call(sr.RuntimeDir, "status", sr.Timeout)
	if ctlErr == nil && resp.Status != nil {
		in.status = *resp.Status
	}
	path, b, boardErr := sr.openBoard(in.status.PID)
	if b != nil {
		defer b.Close()
		// The file may be truncated under the mapping at any time: a
		// fault is a missing board, not a crash of the CLI.
		if err := shm.Guard(func() { in.header, in.slots = b.Header(), b.Snapshot() }); err != nil {
			boardErr, in.header, in.slots = err, shm.Header{}, nil
		} else {
			in.boardOK = true
		}
	}
	if ctlErr != nil && boardErr != nil {
		return nil, fmt.Errorf("%w; and no scoreboard: %v", ctlErr, boardErr)
	}
	first := sr.cpu == nil
	if first {
		sr.cpu = NewCPUSampler()
	}
	pids := slotPIDs(in.slots)
	if first {
		sr.cpu.sample(pids)
		<-time.After(cpuWindow)
		if in.boardOK {
			// Fresh counters after the wait; on a fault, keep the first.
			_ = shm.Guard(func() { in.slots = b.Snapshot() })
		}
	}
	in.procs = sr.cpu.sample(pids)
	in.gpus = sr.gpuUsage()
	in.now = time.Now()
	if ctlErr != nil {
		in.status = control.Status{PID: in.header.MasterPID, Version: "?", Started: in.header.MasterStart,
			Generation: int64(in.header.Generation)}
	}
	r := buildReport(in)
	r.Source, r.Scoreboard = "control+scoreboard", path
	switch {
	case ctlErr != nil:
		r.Source, r.ControlError = "scoreboard", ctlErr.Error()
	case boardErr != nil:
		r.Source = "control"
	}
	return r, nil
}

// openBoard opens the board of the serving master: pid (from the control
// socket), else the pid file's, else the newest live master's board.
func (sr *Reader) openBoard(pid int) (string, *shm.Scoreboard, error) {
	if pid == 0 {
		pid = control.ReadPID(control.PIDFile(sr.RuntimeDir))
	}
	if pid == 0 || !shm.ProcessExists(pid) {
		pid = 0
		var newest time.Time
		for p, path := range shm.Boards(sr.RuntimeDir) {
			fi, err := os.Stat(path)
			if err == nil && shm.ProcessExists(p) && fi.ModTime().After(newest) {
				pid, newest = p, fi.ModTime()
			}
		}
	}
	if pid == 0 {
		return "", nil, errors.New("no live master's scoreboard for this runtime_dir")
	}
	path := shm.PathFor(sr.RuntimeDir, pid)
	b, err := shm.OpenReadOnly(path)
	return path, b, err
}

func (sr *Reader) gpuUsage() []affinity.GPUUsage {
	lister := sr.GPUs
	if lister == nil {
		lister = affinity.NVML{}
	}
	gpus, _ := lister.Usage() // a broken NVML hides the GPU section, not the report
	return gpus
}

func slotPIDs(slots []shm.SlotSnapshot) []int {
	var pids []int
	for _, s := range slots {
		if s.State != shm.Free && s.State != shm.Dead && s.PID > 0 {
			pids = append(pids, s.PID)
		}
	}
	return pids
}
