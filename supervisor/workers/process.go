package workers

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/board"
	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
	"golang.org/x/sys/unix"

	"github.com/supervisor-dev/supervisor/worker"
)

// Process is one running worker process, from spawn to reaped exit.
type Process struct {
	spec worker.Spec
	cmd  *exec.Cmd

	// ready delivers exactly one value: nil once the worker reports ready,
	// or why it never will.
	ready chan error
	// recycle delivers the worker's request to be replaced (at most one).
	recycle chan string
	// lastBeat is the unix-nano time of the last heartbeat (or of
	// readiness): what hang detection reads.
	lastBeat atomic.Int64
	// exited is closed once the process has been reaped; err then holds
	// how it ended.
	exited chan struct{}
	err    error

	// record is the process's scoreboard record (none when it got none);
	// a reload stamps its generation there.
	record board.Record

	// liveness is the master's end of the liveness pipe; closing it (or the
	// master dying) tells the worker its master is gone.
	liveness *os.File

	// models is what the worker said about its models while booting
	// (infer workers; see modelreport.go).
	models modelReport
	// eventsRead is closed once the event reader has read every line the
	// worker wrote (at EOF).
	eventsRead chan struct{}

	// reaped, if set, is called once the process is reaped, before
	// exited is closed: it reads the record's work record (atWork).
	reaped func(p *Process)
	// atWork is what the worker was at work on when it exited, read
	// from its scoreboard record (atWorkRead) once it was reaped: the
	// requests a crash may be blamed on (crashlog.go). Set before exited
	// is closed.
	atWork     shm.AtWork
	atWorkRead bool
}

// Spawner starts worker processes. The zero value re-executes this binary.
// A worker is `<exe> worker`: the master makes its socket (owned by the
// workers' user, Credentials), pins it to its cpuset and NUMA memory from
// its first instruction (startPlaced), gives it a scoreboard record, and
// passes the spec in the environment or, when large, a memfd.
type Spawner struct {
	Exe   string       // "" = /proc/self/exe
	Board *board.Board // scoreboard records for the workers; nil = none
	Creds *Credentials // the workers' user; nil = the master's
	// Regions, when set, serves a prep worker's end of its system shared
	// memory descriptor socket (sysshm.Registry.ServeWorker): each prep
	// worker inherits the other as regionsFD (worker.Spec.RegionsFD).
	Regions func(master *os.File)
}

// spawn starts a worker for spec. The child inherits the ready pipe as fd 3
// and the liveness pipe as fd 4 and runs in its own process group, so a
// terminal's Ctrl-C reaches only the master, which decides when workers stop.
func (s Spawner) spawn(spec worker.Spec) (*Process, error) { return s.spawnThen(spec, nil) }

// spawnThen is spawn, with reaped called once the process is reaped,
// before its exited is closed.
func (s Spawner) spawnThen(spec worker.Spec, reaped func(*Process)) (*Process, error) {
	sock, err := listenWorkerSocket(spec.Socket, s.Creds)
	if err != nil {
		return nil, err
	}
	defer sock.Close() // the worker has its own copy once started
	spec.ListenFD = listenFD
	var regionsMaster, regionsWorker *os.File
	if spec.Role == worker.RolePrep && s.Regions != nil {
		regionsMaster, regionsWorker, err = sysshm.WorkerSocket()
		if err != nil {
			return nil, err
		}
		defer regionsWorker.Close() // the worker has its own copy once started
		defer func() {
			if regionsMaster != nil { // not started: nobody serves it
				regionsMaster.Close()
			}
		}()
		spec.RegionsFD = regionsFD
	}
	env, specFile, err := specTransport(&spec)
	if err != nil {
		return nil, err
	}
	if specFile != nil {
		defer specFile.Close() // the worker has its own copy once started
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("ready pipe: %w", err)
	}
	liveR, liveW, err := os.Pipe()
	if err != nil {
		readyR.Close()
		readyW.Close()
		return nil, fmt.Errorf("liveness pipe: %w", err)
	}
	exe := s.Exe
	if exe == "" {
		exe = "/proc/self/exe"
	}
	cmd := exec.Command(exe, "worker")
	cmd.Env = append(os.Environ(), env)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.ExtraFiles = []*os.File{readyW, liveR, sock}
	if specFile != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, specFile) // specFD
	}
	if regionsWorker != nil {
		// At regionsFD whether or not the spec has a memfd: a nil
		// entry is closed in the child.
		cmd.ExtraFiles = append(cmd.ExtraFiles[:3], specFile, regionsWorker)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.Creds.credential()}
	err = startPlaced(cmd, spec) // pinned from its first instruction (placement.go)
	readyW.Close()
	liveR.Close()
	if err != nil {
		readyR.Close()
		liveW.Close()
		return nil, fmt.Errorf("start worker %s: %w", spec.Name, err)
	}
	if regionsMaster != nil {
		go s.Regions(regionsMaster) // until the worker's end closes; closes it
		regionsMaster = nil
	}
	p := &Process{spec: spec, cmd: cmd, ready: make(chan error, 1), recycle: make(chan string, 1),
		exited: make(chan struct{}), liveness: liveW, reaped: reaped, eventsRead: make(chan struct{})}
	go p.readEvents(readyR)
	go p.wait()
	return p, nil
}

// PID is the worker's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Spec is the spec the worker was spawned with.
func (p *Process) Spec() worker.Spec { return p.spec }

// Exited is closed once the process has been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Exit says how the process ended ("exit status 1", "signal: killed");
// only once Exited is closed.
func (p *Process) Exit() string { return describeExit(p.err) }

// Record is the process's scoreboard record (none when it got none).
func (p *Process) Record() board.Record { return p.record }

// Models are the models the worker said, while booting, it does not
// serve (with why) and those it serves.
func (p *Process) Models() (unavailable map[string]string, ready map[string]bool) {
	return p.models.snapshot()
}

// ServedModels are the models the worker runs now: those it was spawned
// with, or those a reload changed them to in place.
func (p *Process) ServedModels() []worker.Model { return p.models.served(p.spec.Models) }

// ModelWarning is why the worker serves model name with a caveat (a
// warm-up ONNX Runtime refused), "" for none.
func (p *Process) ModelWarning(name string) string { return p.models.warning(name) }

// readEvents reads the worker's event pipe until it closes: model states
// (infer workers), the readiness line, then heartbeats and at most one
// recycle request.
func (p *Process) readEvents(r *os.File) {
	defer close(p.eventsRead)
	defer r.Close()
	sc := bufio.NewScanner(r)
	line, ok := p.bootLines(sc)
	if !ok {
		// EOF without a word: the worker died before it could say why.
		<-p.exited
		p.ready <- p.models.diedBooting(p.PID(), describeExit(p.err))
		return
	}
	switch {
	case line == "ok":
		p.lastBeat.Store(time.Now().UnixNano())
		p.ready <- nil
	case strings.HasPrefix(line, "error: "):
		p.ready <- errors.New(strings.TrimPrefix(line, "error: "))
		return
	default:
		p.ready <- fmt.Errorf("said %q instead of ready", line)
		return
	}
	recycled := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "hb":
			p.lastBeat.Store(time.Now().UnixNano())
		case strings.HasPrefix(line, "recycle: ") && !recycled:
			recycled = true
			p.recycle <- strings.TrimPrefix(line, "recycle: ")
		default:
			// A model loaded in place (changeInPlace): which one it is
			// on, should it die there.
			if ev, ok := worker.ParseModelEvent(line); ok {
				p.models.record(ev)
			}
		}
	}
}

// bootLines reads the lines a worker writes before its readiness line
// (model states) and returns that line; ok is false at EOF.
func (p *Process) bootLines(sc *bufio.Scanner) (string, bool) {
	for sc.Scan() {
		ev, isModel := worker.ParseModelEvent(sc.Text())
		if !isModel {
			return sc.Text(), true
		}
		p.models.record(ev)
	}
	return "", false
}

// silentFor is how long ago the worker last showed a sign of life.
func (p *Process) silentFor(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, p.lastBeat.Load()))
}

func (p *Process) wait() {
	p.err = p.cmd.Wait()
	p.liveness.Close()
	// The master made the socket; a worker without root may not remove it.
	// (A prep worker's arena is a memfd: it goes with the worker.)
	_ = os.Remove(p.spec.Socket)
	if p.reaped != nil {
		p.reaped(p)
	}
	close(p.exited)
}

// specFD is where a worker finds its spec when it is too large for the
// environment: after the listening socket.
const specFD = listenFD + 1

// specTransport returns the environment entry that passes spec to the
// worker: the spec itself (worker.SpecEnv) or, when it is larger than
// worker.MaxSpecEnvBytes, worker.SpecFDEnv and a memfd holding it, to be
// inherited as specFD.
func specTransport(spec *worker.Spec) (string, *os.File, error) {
	env, err := spec.Environ()
	if err != nil || len(env) <= worker.MaxSpecEnvBytes {
		return env, nil, err
	}
	fd, err := unix.MemfdCreate("supervisor-worker-spec", unix.MFD_CLOEXEC)
	if err != nil {
		return "", nil, fmt.Errorf("worker spec of %d bytes: memfd: %w", len(env), err)
	}
	f := os.NewFile(uintptr(fd), "worker-spec")
	if _, err := f.WriteString(strings.TrimPrefix(env, worker.SpecEnv+"=")); err != nil {
		f.Close()
		return "", nil, fmt.Errorf("worker spec of %d bytes: write memfd: %w", len(env), err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return "", nil, fmt.Errorf("worker spec: rewind memfd: %w", err)
	}
	return worker.SpecFDEnv + "=" + strconv.Itoa(specFD), f, nil
}

// regionsFD is where a prep worker finds its end of the system shared
// memory descriptor socket: after the spec's memfd (closed when there is
// none), so that equal specs stay equal.
const regionsFD = specFD + 1

// listenFD is where a worker finds its listening socket: after stdin,
// stdout, stderr and the event and liveness pipes.
const listenFD = 5

// listenWorkerSocket creates a worker's listening Unix socket in the
// master, owned by the workers' user and private to it (0600), and returns
// it as a file to hand to the worker. The master making every socket is
// what lets workers run unprivileged in a runtime dir they cannot write.
func listenWorkerSocket(path string, creds *Credentials) (*os.File, error) {
	ln, err := worker.ListenUnix(path)
	if err != nil {
		return nil, err
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	defer ul.Close()
	if err := creds.Chown(path); err != nil {
		return nil, err
	}
	return ul.File()
}

// waitReady waits for the readiness signal, at most timeout. On timeout
// the process is killed, and the error is a *warmupCrash when it was
// loading or warming up a model then (modelReport.timedOut).
func (p *Process) waitReady(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-p.ready:
		return err
	case <-t.C:
		p.kill()
		// The event reader says its word once it has read every line the
		// worker wrote (at EOF, now): the model it was on is the last one
		// it named.
		select {
		case <-p.ready:
		case <-time.After(time.Second):
		}
		return p.models.timedOut(p.PID(), timeout)
	}
}

// Stop asks the worker to drain and exit (SIGTERM) and kills it if it has
// not exited within grace.
func (p *Process) Stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		p.kill()
	}
}

func (p *Process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// describeExit renders how a process ended: "exit status 1", "signal: killed".
func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// startPlaced starts a worker's command on its cpuset and NUMA memory
// policy from its first instruction, and names its GPU in
// CUDA_VISIBLE_DEVICES, so that device 0 is the worker's own GPU; a GPU
// worker's LD_LIBRARY_PATH gets the directories of its CUDA libraries.
func startPlaced(cmd *exec.Cmd, spec worker.Spec) error {
	cpus, err := affinity.ParseCPUList(spec.CPUs)
	if err != nil {
		return fmt.Errorf("worker %s: cpus: %w", spec.Name, err)
	}
	if spec.GPU != "" {
		cmd.Env = append(cmd.Env, "CUDA_VISIBLE_DEVICES="+spec.GPU)
		if spec.LibraryPath != "" { // the last of a key wins in exec.Cmd.Env
			cmd.Env = append(cmd.Env, "LD_LIBRARY_PATH="+spec.LibraryPath)
		}
	}
	mem := affinity.MemPolicy{Mode: affinity.MemMode(spec.MemoryPolicy), Node: spec.NUMANode}
	return affinity.StartPlaced(cmd, cpus, mem)
}
