package supervisor

import (
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/worker"
)

// Slot states, as status reports them.
const (
	stateStarting   = "starting"
	stateReady      = "ready"
	stateRestarting = "restarting"
	stateStopping   = "stopping"
	stateStopped    = "stopped"
)

// Restart backoff after an unexpected exit: doubling from backoffBase up to
// backoffMax; a worker that stayed up for backoffReset starts over at base.
const (
	backoffBase  = 100 * time.Millisecond
	backoffMax   = 30 * time.Second
	backoffReset = 10 * time.Second
)

// slot keeps one worker position (e.g. "prep-0") filled: it spawns the
// worker, waits for its readiness, and restarts it with exponential backoff
// when it exits unexpectedly. One goroutine (run) owns the process; the
// mutex guards only what status and the lb read.
type slot struct {
	spec        worker.Spec
	spawner     spawner
	bootTimeout time.Duration
	drain       time.Duration
	log         zerolog.Logger
	changed     func() // called when the ready process changes

	stop chan struct{} // closed by stopAndWait
	done chan struct{} // closed when run returns

	mu       sync.Mutex
	state    string
	current  *process // nil unless ready
	restarts int
	lastExit string
}

// WorkerStatus is one slot as `supervisor status` shows it.
type WorkerStatus struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	PID      int    `json:"pid,omitempty"`
	State    string `json:"state"`
	Socket   string `json:"socket"`
	Restarts int    `json:"restarts"`
	LastExit string `json:"last_exit,omitempty"`
}

func (s *slot) status() WorkerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := WorkerStatus{Name: s.spec.Name, Role: string(s.spec.Role), State: s.state,
		Socket: s.spec.Socket, Restarts: s.restarts, LastExit: s.lastExit}
	if s.current != nil {
		st.PID = s.current.pid()
	}
	return st
}

// readyProcess returns the serving process, or nil.
func (s *slot) readyProcess() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

func (s *slot) set(state string, p *process) {
	s.mu.Lock()
	s.state, s.current = state, p
	s.mu.Unlock()
	s.changed()
}

// start runs the slot in its own goroutine; the first boot's outcome goes
// to booted.
func (s *slot) start(booted chan<- error) {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		s.run(s.stop, booted)
	}()
}

// stopAndWait stops the slot's worker (drained) and waits for the slot to
// finish. Safe on a slot that was never started.
func (s *slot) stopAndWait() {
	if s.stop == nil {
		return
	}
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// run keeps the slot filled until stop is closed. The first boot's outcome
// goes to booted: a worker that cannot start at all is a startup error for
// the master, not something to retry forever.
func (s *slot) run(stop <-chan struct{}, booted chan<- error) {
	first := true
	backoff := backoffBase
	for {
		s.set(stateStarting, nil)
		p, err := s.boot(stop)
		if first {
			booted <- err
			if err != nil {
				s.set(stateStopped, nil)
				return
			}
			first = false
		}
		if err == nil {
			s.set(stateReady, p)
			since := time.Now()
			select {
			case <-p.exited:
				s.exitedUnexpectedly(p)
				if time.Since(since) > backoffReset {
					backoff = backoffBase
				}
			case <-stop:
				s.set(stateStopping, nil)
				p.stop(s.drain)
				s.set(stateStopped, nil)
				return
			}
		} else if isStopped(stop) {
			s.set(stateStopped, nil)
			return
		} else {
			s.log.Error().Err(err).Str("worker", s.spec.Name).Msg("worker failed to boot")
		}
		s.set(stateRestarting, nil)
		select {
		case <-time.After(backoff):
		case <-stop:
			s.set(stateStopped, nil)
			return
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// boot spawns a process and waits for it to be ready.
func (s *slot) boot(stop <-chan struct{}) (*process, error) {
	p, err := s.spawner.spawn(s.spec)
	if err != nil {
		return nil, err
	}
	s.log.Info().Str("worker", s.spec.Name).Int("pid", p.pid()).Msg("worker spawned")
	ready := make(chan error, 1)
	go func() { ready <- p.waitReady(s.bootTimeout) }()
	select {
	case err := <-ready:
		if err != nil {
			p.kill()
			return nil, fmt.Errorf("worker %s (pid %d): %w", s.spec.Name, p.pid(), err)
		}
		return p, nil
	case <-stop:
		p.stop(s.drain)
		return nil, fmt.Errorf("worker %s: stopped while booting", s.spec.Name)
	}
}

func (s *slot) exitedUnexpectedly(p *process) {
	how := describeExit(p.err)
	s.mu.Lock()
	s.restarts++
	s.lastExit = how
	s.mu.Unlock()
	s.log.Error().Str("worker", s.spec.Name).Int("pid", p.pid()).Str("exit", how).Msg("worker exited unexpectedly; restarting")
}

func isStopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
