package supervisor

import (
	"fmt"
	"sync"

	"github.com/supervisor-dev/supervisor/worker"
)

// modelReport collects the model states an infer worker reports while it
// boots (worker.ModelState): which models it serves, which are
// unavailable and why, and which one it was warming up last. It is written
// by the event reader and read by status, so it has its own lock.
type modelReport struct {
	mu          sync.Mutex
	unavailable map[string]string // model -> reason
	ready       map[string]bool
	warming     string // set by ModelWarming, cleared by the model's next state
}

func (r *modelReport) record(ev worker.ModelEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unavailable == nil {
		r.unavailable, r.ready = map[string]string{}, map[string]bool{}
	}
	r.warming = ""
	switch ev.State {
	case worker.ModelWarming:
		r.warming = ev.Name
	case worker.ModelReady:
		r.ready[ev.Name] = true
	case worker.ModelUnavailable:
		r.unavailable[ev.Name] = ev.Reason
	}
}

// diedBooting is the boot error of a worker that exited before it said
// ready or why not: a *warmupCrash when it was warming up a model then.
func (r *modelReport) diedBooting(pid int, exit string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.warming != "" {
		return &warmupCrash{Model: r.warming, PID: pid, Exit: exit}
	}
	return fmt.Errorf("exited before it was ready (%s)", exit)
}

// snapshot returns copies of the unavailable models and their reasons,
// and of the models served.
func (r *modelReport) snapshot() (unavailable map[string]string, ready map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	unavailable, ready = make(map[string]string, len(r.unavailable)), make(map[string]bool, len(r.ready))
	for k, v := range r.unavailable {
		unavailable[k] = v
	}
	for k := range r.ready {
		ready[k] = true
	}
	return unavailable, ready
}

// warmupCrash is the boot error of an infer worker that died (a signal
// from inside ONNX Runtime, typically SIGFPE on an integer Mod or Div by
// zero) while it was loading or warming up Model. The position then marks the
// model unavailable and boots again without it (position.boot), instead of
// crash-looping and leaving every other model unserved.
type warmupCrash struct {
	Model string
	PID   int
	Exit  string // how the process ended, e.g. "signal: floating point exception"
}

func (e *warmupCrash) Error() string {
	return fmt.Sprintf("exited (%s) while loading or warming up model %q", e.Exit, e.Model)
}

// reason is what the model's unavailability says afterwards.
func (e *warmupCrash) reason() string {
	return fmt.Sprintf("an infer worker (pid %d) died (%s) while loading or warming it up; "+
		"the model is skipped until its file or config changes: fix it (or set its warmup: none or a request file) and reload", e.PID, e.Exit)
}
