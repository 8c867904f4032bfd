package workers

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
)

// modelsWorker plays an infer worker loading spec.Models: it reports each
// model's state, dies (exit 2, as a Go process does on a SIGFPE in C code)
// on a model named crash*, hangs on hang* (until boot_timeout kills it),
// reports bad* and models with warmup "fail" unavailable, skips what the master marked unavailable, then
// serves. It changes its models in place (worker.ModelsPath) by the same
// rules, for the models it did not have.
func modelsWorker(spec *worker.Spec) {
	rt := worker.Start(spec)
	load := func(m worker.Model, skip map[string]string) worker.ModelStatus {
		st := worker.ModelStatus{Metadata: tensor.Metadata{Name: m.Name}}
		if reason, ok := skip[m.Name]; ok {
			rt.ModelState(m.Name, worker.ModelUnavailable, reason)
			st.Unavailable = reason
			return st
		}
		rt.ModelState(m.Name, worker.ModelWarming, "")
		switch {
		case strings.HasPrefix(m.Name, "crash"):
			os.Exit(2)
		case strings.HasPrefix(m.Name, "hang"):
			select {}
		case strings.HasPrefix(m.Name, "bad"), m.Warmup == "fail":
			rt.ModelState(m.Name, worker.ModelUnavailable, "warm-up failed")
			st.Unavailable = "warm-up failed"
		default:
			rt.ModelState(m.Name, worker.ModelReady, "")
		}
		return st
	}
	have := map[string]worker.ModelStatus{}
	for _, m := range spec.Models {
		have[m.Name] = load(m, spec.Unavailable)
	}
	change := func(ctx *fasthttp.RequestCtx) {
		var ch worker.ModelsChange
		if err := json.Unmarshal(ctx.PostBody(), &ch); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadRequest)
			return
		}
		next := map[string]worker.ModelStatus{}
		var out []worker.ModelStatus
		for _, m := range ch.Models {
			st, ok := have[m.Name]
			if !ok {
				st = load(m, ch.Unavailable)
			}
			next[m.Name] = st
			out = append(out, st)
		}
		have = next
		b, _ := json.Marshal(out)
		ctx.SetBody(b)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == worker.ModelsPath {
			change(ctx)
			return
		}
		ctx.SetBodyString("ok")
	}}
	if err := rt.Serve(srv); err != nil {
		os.Exit(2)
	}
}

// TestPositionSkipsModelsItsWorkersDiedOn: a worker that dies while warming a
// model is booted again at once without it, once per such model, and the
// first boot still succeeds; the reasons reach status.
func TestPositionSkipsModelsItsWorkersDiedOn(t *testing.T) {
	s, _, _ := testPosition(t, "models", testLifecycle())
	s.tmpl.Role = worker.RoleInfer
	for _, n := range []string{"a", "crash1", "bad", "crash2", "b"} {
		s.tmpl.Models = append(s.tmpl.Models, worker.Model{Name: n, Path: n + ".onnx", Version: "1"})
	}
	bootPosition(t, s)
	p := s.Serving()
	un, ready := p.models.snapshot()
	if len(un) != 3 || !ready["a"] || !ready["b"] || un["bad"] != "warm-up failed" {
		t.Fatalf("unavailable %v, ready %v: want crash1, crash2 and bad unavailable, a and b ready", un, ready)
	}
	for _, n := range []string{"crash1", "crash2"} {
		if !strings.Contains(un[n], "died (exit status 2)") {
			t.Errorf("%s: reason %q, want it to say the worker died and how", n, un[n])
		}
	}
	if got := p.spec.Unavailable; len(got) != 2 {
		t.Errorf("the serving worker's spec skips %v, want crash1 and crash2", got)
	}
	if st := s.Status(); len(st.UnavailableModels) != 3 || st.Restarts != 0 {
		t.Errorf("status %+v, want 3 unavailable models and no restart counted", st)
	}
	// A changed file is tried again.
	changed := append([]worker.Model(nil), p.spec.Models...)
	changed[1].Version = "2"
	if got := s.skippedModels(changed); len(got) != 1 || got["crash2"] == "" {
		t.Errorf("skipped after crash1's file changed = %v, want only crash2", got)
	}
}

// TestPositionSkipsModelsThatDoNotFitBootTimeout: a worker killed at
// boot_timeout while it loads or warms up a model is booted again at once
// without that model, which is unavailable saying so; the first boot
// succeeds (at 49438f4 it failed, and the master exited). The model is
// tried again once its spec or boot_timeout changes.
func TestPositionSkipsModelsThatDoNotFitBootTimeout(t *testing.T) {
	lc := testLifecycle()
	lc.bootTimeout = 3 * time.Second
	s, _, _ := testPosition(t, "models", lc)
	s.tmpl.Role = worker.RoleInfer
	for _, n := range []string{"a", "hang", "b"} {
		s.tmpl.Models = append(s.tmpl.Models, worker.Model{Name: n, Path: n + ".onnx", Version: "1"})
	}
	bootPosition(t, s)
	p := s.Serving()
	un, ready := p.models.snapshot()
	if len(un) != 1 || !ready["a"] || !ready["b"] {
		t.Fatalf("unavailable %v, ready %v: want hang unavailable, a and b ready", un, ready)
	}
	if !strings.Contains(un["hang"], "did not fit boot_timeout (3s)") || !strings.Contains(un["hang"], "raise boot_timeout") {
		t.Errorf("hang: reason %q, want it to name boot_timeout and what to change", un["hang"])
	}
	s.mu.Lock()
	skipped := s.skipped
	s.mu.Unlock()
	longer := &Position{lc: &Lifecycle{bootTimeout: time.Minute}, skipped: skipped}
	if got := longer.skippedModels(p.spec.Models); len(got) != 0 {
		t.Errorf("skipped with a longer boot_timeout = %v, want none", got)
	}
	batched := append([]worker.Model(nil), p.spec.Models...)
	batched[1].Batching = &worker.Batching{MaxBatchSize: 8}
	if got := s.skippedModels(batched); len(got) != 0 {
		t.Errorf("skipped after hang's batching changed = %v, want none", got)
	}
}

// TestReloadRefusesAWorkerThatLosesAModel: a reload whose new worker does
// not serve a model the old one serves is refused, naming the model; the
// old worker keeps serving with its template. A model the old worker did
// not serve either does not block a reload.
func TestReloadRefusesAWorkerThatLosesAModel(t *testing.T) {
	s, _, retired := testPosition(t, "models", testLifecycle())
	s.tmpl.Role = worker.RoleInfer
	s.tmpl.Models = []worker.Model{{Name: "a", Path: "a.onnx"}, {Name: "bad", Path: "bad.onnx"}}
	bootPosition(t, s)
	old := s.Serving()

	broken := s.tmpl
	broken.Models = []worker.Model{{Name: "a", Path: "a.onnx", Warmup: "fail"}, {Name: "bad", Path: "bad.onnx"}}
	err := s.Reconfigure(Reconfig{Tmpl: broken, LC: s.lc, Replace: true})
	var failed *LoadFailed
	if !errors.As(err, &failed) || len(failed.Models) != 1 || failed.Models["a"] != "warm-up failed" ||
		!strings.Contains(err.Error(), `failed to load "a": warm-up failed`) {
		t.Fatalf("reload breaking a = %v, want a *LoadFailed naming a alone", err)
	}
	if p := s.Serving(); p != old {
		t.Fatalf("serving pid %d after the refused reload, want the old worker %d", p.PID(), old.PID())
	}
	if _, ready := old.models.snapshot(); !ready["a"] {
		t.Error("the old worker no longer serves a")
	}

	renamed := s.tmpl
	renamed.Models = []worker.Model{{Name: "a", Path: "a.onnx"}, {Name: "bad", Path: "bad2.onnx"}}
	if err := s.Reconfigure(Reconfig{Tmpl: renamed, LC: s.lc, Replace: true}); err != nil {
		t.Fatalf("reload that changes only a model that did not serve = %v, want it to succeed", err)
	}
	select {
	case p := <-retired:
		if p != old {
			t.Errorf("retired pid %d, want the old worker %d", p.PID(), old.PID())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the old worker was not retired after the reload")
	}
}

// TestLargeSpecGoesThroughMemfd: a spec too large for one environment
// string (hundreds of models) reaches the worker through a memfd.
func TestLargeSpecGoesThroughMemfd(t *testing.T) {
	sp, spec := testSpawner(t, "models")
	for i := range 2000 {
		spec.Models = append(spec.Models, worker.Model{Name: fmt.Sprintf("model-%04d", i), Path: "/nowhere/model.onnx"})
	}
	if env, _ := spec.Environ(); len(env) <= worker.MaxSpecEnvBytes {
		t.Fatalf("spec of %d bytes is not over the environment bound", len(env))
	}
	p, err := sp.spawn(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	if err := p.waitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ready := p.models.snapshot(); len(ready) != 2000 {
		t.Errorf("the worker reported %d models ready, want 2000", len(ready))
	}
}

func TestParseModelEventRoundTrip(t *testing.T) {
	if _, ok := worker.ParseModelEvent("hb"); ok {
		t.Error("a heartbeat parsed as a model event")
	}
	if _, ok := worker.ParseModelEvent(`model {"state":"ready"}`); ok {
		t.Error("an event without a model name parsed")
	}
	ev, ok := worker.ParseModelEvent(`model {"name":"m","state":"unavailable","reason":"a\nb"}`)
	if !ok || ev.Name != "m" || ev.State != worker.ModelUnavailable || ev.Reason != "a\nb" {
		t.Errorf("ParseModelEvent = %+v, %v", ev, ok)
	}
}
