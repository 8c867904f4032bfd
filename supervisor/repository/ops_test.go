package repository

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// stallMaster is a master whose reloads wait for release, then store the
// file through the API (Plan, Commit) only when apply is set, as a reload
// that fails before storing does not.
type stallMaster struct {
	api      *API
	file     *config.Config
	apply    bool
	entered  chan struct{} // a reload began
	release  chan struct{} // lets it end
	stopping atomic.Bool
	mu       sync.Mutex
	cfg      *config.Config
}

func (m *stallMaster) Reload() control.OpResult {
	m.entered <- struct{}{}
	<-m.release
	if !m.apply {
		return control.OpResult{Op: "reload", Error: "the config file does not parse"}
	}
	eff := m.api.Plan(m.file)
	m.api.Commit(eff)
	m.mu.Lock()
	m.cfg = eff
	m.mu.Unlock()
	return control.OpResult{Op: "reload", OK: true}
}

func (m *stallMaster) Config() *config.Config {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cfg
}

func (m *stallMaster) ModelStates() []control.ModelState {
	var out []control.ModelState
	for _, mc := range m.Config().Models {
		out = append(out, control.ModelState{Name: mc.Name, Ready: true})
	}
	return out
}

func (m *stallMaster) Stopping() bool { return m.stopping.Load() }
func (m *stallMaster) Unready() bool  { return m.stopping.Load() }

func newStallMaster(apply bool, startup []string) *stallMaster {
	m := &stallMaster{file: fileWith(true, startup, "a", "b"), apply: apply,
		entered: make(chan struct{}, 1), release: make(chan struct{})}
	m.api = New(m, zerolog.Nop())
	m.cfg = m.api.Start(m.file)
	return m
}

// answerWithin runs call and returns its answer, failing the test when it
// does not answer within d.
func answerWithin(t *testing.T, d time.Duration, what string, call func() (int, string)) (int, string) {
	t.Helper()
	type answer struct {
		status int
		msg    string
	}
	got := make(chan answer, 1)
	go func() { s, msg := call(); got <- answer{s, msg} }()
	select {
	case a := <-got:
		return a.status, a.msg
	case <-time.After(d):
		t.Fatalf("%s: no answer within %s", what, d)
		return 0, ""
	}
}

// TestLoadCutShortByStop: a stop that begins while a load waits for its
// reload answers the load at once (503), not when the reload ends; the
// reload, still running, keeps the one-at-a-time lock until it ends, then
// leaves no trace of the change it did not store and no model LOADING.
func TestLoadCutShortByStop(t *testing.T) {
	m := newStallMaster(false, []string{"a"})
	status, msg := 0, ""
	done := make(chan struct{})
	go func() {
		defer close(done)
		status, msg = m.api.repositoryLoad("b", nil)
	}()
	<-m.entered
	if model, state := m.api.busy(); model != "b" || state != indexLoading {
		t.Errorf("during the load, busy = %q %q, want b LOADING", model, state)
	}
	m.stopping.Store(true)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a load waiting for its reload was not answered within 5s of the stop")
	}
	if status != fasthttp.StatusServiceUnavailable || !strings.Contains(msg, "cut short") {
		t.Errorf("load cut by a stop: %d %q, want 503 saying it was cut short", status, msg)
	}
	if m.api.ops.TryLock() {
		t.Fatal("the one-at-a-time lock was free while the cut load's reload still ran")
	}
	close(m.release)
	polltest.Until(t, 5*time.Second, 5*time.Millisecond, "the cut load's reload to end and free the lock", func() bool {
		if !m.api.ops.TryLock() {
			return false
		}
		m.api.ops.Unlock()
		return true
	})
	if model, _ := m.api.busy(); model != "" {
		t.Errorf("after the reload ended, %q is still busy", model)
	}
	if d := m.api.Describe(); d["b"] != reasonNotStarted {
		t.Errorf("after a load whose reload stored nothing, b's state is %q, want %q (undone)", d["b"], reasonNotStarted)
	}
}

// TestUnloadNotStoredIsUndone: an unload whose reload fails before storing
// a config answers 400 "not applied" and leaves the model as it was, so
// the next reload (SIGHUP) does not apply a change the client was told
// failed.
func TestUnloadNotStoredIsUndone(t *testing.T) {
	m := newStallMaster(false, nil)
	close(m.release)
	status, msg := answerWithin(t, 5*time.Second, "unload a", func() (int, string) { return m.api.repositoryUnload("a", nil) })
	if status != fasthttp.StatusBadRequest || !strings.Contains(msg, "not applied") {
		t.Errorf("unload whose reload failed: %d %q, want 400 not applied", status, msg)
	}
	if got := modelNames(m.api.Plan(m.file)); len(got) != 2 {
		t.Errorf("the next reload serves %v, want both a and b (the failed unload undone)", got)
	}
}
