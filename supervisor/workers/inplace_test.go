package workers

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestInPlace: only a change that adds or retires models, every model both
// specs list unchanged and nothing worker-wide changed, is applied in
// place; what each process gets at spawn may differ.
func TestInPlace(t *testing.T) {
	m := func(name, version string) worker.Model {
		return worker.Model{Name: name, Path: name + ".onnx", Version: version}
	}
	old := worker.Spec{Role: worker.RoleInfer, Name: "infer-0", Generation: 1, Socket: "a.sock", IntraOpThreads: 2,
		Models: []worker.Model{m("vm@1", "x"), m("vm@2", "y")}}
	with := func(f func(*worker.Spec)) worker.Spec {
		s := old
		s.Models = slices.Clone(old.Models)
		s.Generation, s.Socket = 2, "b.sock"
		f(&s)
		return s
	}
	for _, c := range []struct {
		name string
		next worker.Spec
		want bool
	}{
		{"a version added", with(func(s *worker.Spec) { s.Models = append(s.Models, m("vm@3", "z")) }), true},
		{"a version retired", with(func(s *worker.Spec) { s.Models = s.Models[1:] }), true},
		{"one added, one retired", with(func(s *worker.Spec) { s.Models = []worker.Model{m("vm@2", "y"), m("vm@3", "z")} }), true},
		{"a file changed", with(func(s *worker.Spec) { s.Models[0].Version = "x2" }), false},
		{"a model's settings changed", with(func(s *worker.Spec) { s.Models[1].Warmup = worker.WarmupNone }), false},
		{"added, and a worker-wide setting changed", with(func(s *worker.Spec) {
			s.Models = append(s.Models, m("vm@3", "z"))
			s.IntraOpThreads = 4
		}), false},
		{"nothing but the spawn changed", with(func(*worker.Spec) {}), false},
		{"every model retired", with(func(s *worker.Spec) { s.Models = nil }), false},
	} {
		if got := InPlace(old, c.next); got != c.want {
			t.Errorf("%s: InPlace %v, want %v", c.name, got, c.want)
		}
	}
	prep := old
	prep.Role = worker.RolePrep
	if InPlace(prep, with(func(s *worker.Spec) { s.Role = worker.RolePrep; s.Models = s.Models[:1] })) {
		t.Error("a prep worker's change is in place; want it replaced")
	}
}

// inPlacePosition boots an infer position of the models helper serving
// models, with boot_timeout bootTimeout.
func inPlacePosition(t *testing.T, bootTimeout time.Duration, models ...string) (*Position, chan struct{}) {
	t.Helper()
	lc := testLifecycle()
	lc.bootTimeout = bootTimeout
	s, changed, _ := testPosition(t, "models", lc)
	s.tmpl.Role = worker.RoleInfer
	for _, n := range models {
		s.tmpl.Models = append(s.tmpl.Models, worker.Model{Name: n, Path: n + ".onnx", Version: "1"})
	}
	bootPosition(t, s)
	return s, changed
}

// withModels is s's template serving models (each path name.onnx).
func withModels(s *Position, models ...string) worker.Spec {
	tmpl := s.tmpl
	tmpl.Models = nil
	for _, n := range models {
		tmpl.Models = append(tmpl.Models, worker.Model{Name: n, Path: n + ".onnx", Version: "1"})
	}
	return tmpl
}

// TestPositionChangesModelsInPlace: a reload in place keeps the worker
// (same process), its report follows (added ready or unavailable with the
// worker's reason, retired forgotten), ServedModels and the scoreboard
// slots name the new models with the retired one keeping its place.
func TestPositionChangesModelsInPlace(t *testing.T) {
	s, _ := inPlacePosition(t, 30*time.Second, "a", "b")
	p := s.Serving()
	if err := s.Reconfigure(Reconfig{Tmpl: withModels(s, "b", "c", "bad1"), LC: s.lc, InPlace: true}); err != nil {
		t.Fatal(err)
	}
	if s.Serving() != p {
		t.Fatal("the worker was replaced; want it kept")
	}
	un, ready := p.Models()
	if len(ready) != 2 || !ready["b"] || !ready["c"] || len(un) != 1 || un["bad1"] != "warm-up failed" {
		t.Errorf("after the change: unavailable %v, ready %v; want b, c ready, bad1 unavailable, a forgotten", un, ready)
	}
	var names []string
	for _, m := range p.ServedModels() {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, []string{"b", "c", "bad1"}) || !slices.Equal(p.models.slots, []string{"a", "b", "c", "bad1"}) {
		t.Errorf("served %v, slots %v; want [b c bad1], slots [a b c bad1]", names, p.models.slots)
	}
	if st := s.Status(); st.State != stateReady || st.Restarts != 0 {
		t.Errorf("status %+v; want ready, no restart", st)
	}
}

// TestPositionInPlaceLoadOverBootTimeout: a model that does not load
// within boot_timeout in place gets the worker killed; it restarts at once
// with the new models, that model skipped (boot_timeout in its reason),
// and the restart's boot answers the reload.
func TestPositionInPlaceLoadOverBootTimeout(t *testing.T) {
	s, _ := inPlacePosition(t, 2*time.Second, "a")
	p := s.Serving()
	if err := s.Reconfigure(Reconfig{Tmpl: withModels(s, "a", "hang1"), LC: s.lc, InPlace: true}); err != nil {
		t.Fatalf("reload: %v; want the restarted worker's boot to answer it", err)
	}
	next := s.Serving()
	if next == nil || next == p {
		t.Fatalf("serving %v; want a new worker", next)
	}
	un, ready := next.Models()
	if !ready["a"] || !strings.Contains(un["hang1"], "boot_timeout") {
		t.Errorf("unavailable %v, ready %v; want a ready, hang1 unavailable naming boot_timeout", un, ready)
	}
}

// TestPositionStopDuringInPlaceLoad: a stop that arrives while a model
// loads in place ends the reload with ErrStopping, and the position stops
// (its worker reaped), bounded.
func TestPositionStopDuringInPlaceLoad(t *testing.T) {
	s, _ := inPlacePosition(t, time.Minute, "a")
	p := s.Serving()
	done := make(chan error, 1)
	go func() { done <- s.Reconfigure(Reconfig{Tmpl: withModels(s, "a", "hang1"), LC: s.lc, InPlace: true}) }()
	polltest.Until(t, 30*time.Second, 10*time.Millisecond, "the worker loading hang1", func() bool { return warmingIs(p, "hang1") })
	stopped := make(chan struct{})
	go func() { s.StopAndWait(); close(stopped) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrStopping) {
			t.Errorf("reload: %v; want ErrStopping", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the reload did not return after the stop")
	}
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the position did not stop")
	}
	select {
	case <-p.Exited():
	default:
		t.Error("the worker was not reaped")
	}
}

func warmingIs(p *Process, name string) bool {
	p.models.mu.Lock()
	defer p.models.mu.Unlock()
	return p.models.warming == name
}
