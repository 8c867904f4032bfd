package workers

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/supervisor-dev/supervisor/worker"
)

// modelReport collects the model states an infer worker reports while it
// boots or changes its models in place (worker.ModelState): which models
// it serves, which are unavailable and why, and which one it was warming
// up last. It is written by the event reader and read by status, so it
// has its own lock.
type modelReport struct {
	mu          sync.Mutex
	unavailable map[string]string // model -> reason
	ready       map[string]bool
	warnings    map[string]string // ready model -> why its warm-up failed
	warming     string            // set by ModelWarming, cleared by the model's next state
	warmingAt   time.Time
	// models and slots are the worker's models and its scoreboard
	// record's model names once a reload changed them in place
	// (finishChange); nil: those it was spawned with.
	models []worker.Model
	slots  []string
}

func (r *modelReport) record(ev worker.ModelEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unavailable == nil {
		r.unavailable, r.ready, r.warnings = map[string]string{}, map[string]bool{}, map[string]string{}
	}
	r.warming = ""
	switch ev.State {
	case worker.ModelWarming:
		r.warming, r.warmingAt = ev.Name, time.Now()
	case worker.ModelReady:
		r.ready[ev.Name] = true
		delete(r.unavailable, ev.Name)
		if ev.Warning != "" {
			r.warnings[ev.Name] = ev.Warning
		}
	case worker.ModelUnavailable:
		r.unavailable[ev.Name] = ev.Reason
		delete(r.ready, ev.Name)
	}
}

// loadingInPlace is why a model being added in place does not serve yet.
const loadingInPlace = "loading: a reload added it, and the infer worker is loading and warming it up"

// startChange returns the change in place from the worker's models (those
// it was spawned with, or the last change's) to next: next's models, and
// the record's model names with the added ones after the others (a
// retired model keeps its place, so no counter moves). The added models
// are unavailable (loadingInPlace) until finishChange.
func (r *modelReport) startChange(spawned, next []worker.Model) worker.ModelsChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unavailable == nil {
		r.unavailable, r.ready, r.warnings = map[string]string{}, map[string]bool{}, map[string]string{}
	}
	slots := r.slots
	if slots == nil {
		for _, m := range spawned {
			slots = append(slots, m.Name)
		}
	}
	slots = slices.Clone(slots)
	for _, m := range next {
		if !slices.Contains(slots, m.Name) {
			slots = append(slots, m.Name)
		}
		if !r.ready[m.Name] && r.unavailable[m.Name] == "" {
			r.unavailable[m.Name] = loadingInPlace
		}
	}
	return worker.ModelsChange{Models: next, Slots: slots}
}

// finishChange records the worker's answer to ch (its new GET /metadata):
// each model's state, and the retired models forgotten.
func (r *modelReport) finishChange(ch worker.ModelsChange, sts []worker.ModelStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.models, r.slots = ch.Models, ch.Slots
	listed := map[string]bool{}
	for _, m := range ch.Models {
		listed[m.Name] = true
	}
	for _, st := range sts {
		if st.Unavailable != "" {
			r.unavailable[st.Name] = st.Unavailable
			delete(r.ready, st.Name)
			continue
		}
		r.ready[st.Name] = true
		delete(r.unavailable, st.Name)
		if st.Warning != "" {
			r.warnings[st.Name] = st.Warning
		}
	}
	for name := range r.ready {
		if !listed[name] {
			delete(r.ready, name)
			delete(r.warnings, name)
		}
	}
	for name := range r.unavailable {
		if !listed[name] {
			delete(r.unavailable, name)
		}
	}
}

// served is the worker's models now: spawned, or those a reload changed
// them to in place.
func (r *modelReport) served(spawned []worker.Model) []worker.Model {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.models != nil {
		return r.models
	}
	return spawned
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

// timedOut is the boot error of a worker killed at boot_timeout: a
// *warmupCrash naming the model it was loading or warming up then, so
// that the position boots again without that model (its warm-up does not
// fit), or a plain error when it was past its models.
func (r *modelReport) timedOut(pid int, timeout time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.warming != "" {
		return &warmupCrash{Model: r.warming, PID: pid, Exit: "killed at boot_timeout",
			BootTimeout: timeout, Took: time.Since(r.warmingAt)}
	}
	return fmt.Errorf("not ready within boot_timeout (%s): killed", timeout)
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

// warning is what a model the worker serves warned of at boot (its
// warm-up failed), "" for none.
func (r *modelReport) warning(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.warnings[name]
}

// warmupCrash is the boot error of an infer worker that died (a signal
// from inside ONNX Runtime, typically SIGFPE on an integer Mod or Div by
// zero) while it was loading or warming up Model, or that was killed
// there at boot_timeout (BootTimeout set). The position then marks the
// model unavailable and boots again without it (position.boot), instead of
// crash-looping, or exiting the master at its first boot, and leaving
// every other model unserved.
type warmupCrash struct {
	Model string
	PID   int
	Exit  string // how the process ended, e.g. "signal: floating point exception"
	// BootTimeout is the boot_timeout the worker was killed at (0: it
	// died on its own); Took how long it had been on Model then.
	BootTimeout, Took time.Duration
}

func (e *warmupCrash) Error() string {
	if e.BootTimeout > 0 {
		return fmt.Sprintf("not ready within boot_timeout (%s): killed while loading or warming up model %q", e.BootTimeout, e.Model)
	}
	return fmt.Sprintf("exited (%s) while loading or warming up model %q", e.Exit, e.Model)
}

// reason is what the model's unavailability says afterwards.
func (e *warmupCrash) reason() string {
	if e.BootTimeout > 0 {
		return fmt.Sprintf("loading and warming it up did not fit boot_timeout (%s): an infer worker (pid %d) was killed after %s on it; "+
			"the model is skipped until its file, its config or boot_timeout changes: raise boot_timeout, lower its max_batch_size, or set its warmup: none, and reload",
			e.BootTimeout, e.PID, e.Took.Round(time.Millisecond))
	}
	return fmt.Sprintf("an infer worker (pid %d) died (%s) while loading or warming it up; "+
		"the model is skipped until its file or config changes: fix it (or set its warmup: none or a request file) and reload", e.PID, e.Exit)
}

// LoadFailed is why a reload's replacement worker was refused: it does not
// serve Models (name -> reason), which the worker it was to replace
// serves. Their new file or config failed to load, to warm up or to fit
// boot_timeout; the old worker keeps serving their previous version, and
// the reload keeps their previous config (Master.applyReload).
type LoadFailed struct {
	Models map[string]string
}

func (e *LoadFailed) Error() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(e.Models)) {
		parts = append(parts, fmt.Sprintf("failed to load %q: %s", name, e.Models[name]))
	}
	return strings.Join(parts, "; ") + " (the previous version keeps serving, with its config)"
}

// keepsModels is a reload's check on the replacement of old (see
// position.replace): it refuses, with a *LoadFailed, a worker that does not
// serve every model old serves and the new spec still lists. A model old
// did not serve either may stay unavailable: nothing is lost.
func keepsModels(old *Process) func(*Process) error {
	_, served := old.models.snapshot()
	return func(next *Process) error {
		un, _ := next.models.snapshot()
		failed := map[string]string{}
		for name := range served {
			if reason, down := un[name]; down {
				failed[name] = reason
			}
		}
		if len(failed) == 0 {
			return nil
		}
		return &LoadFailed{Models: failed}
	}
}
