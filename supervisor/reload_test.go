package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/modelid"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestReloadsCoalesce: reloads asked for while one runs are all answered
// by one more run, never by runs of their own, and runs never overlap.
func TestReloadsCoalesce(t *testing.T) {
	var q reloadQueue
	var runs, running atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	run := func() control.OpResult {
		if running.Add(1) != 1 {
			t.Error("two reloads ran at once")
		}
		defer running.Add(-1)
		n := runs.Add(1)
		started <- struct{}{}
		<-release
		return control.OpResult{Generation: int64(n)}
	}
	first := q.request(run)
	<-started // the first run is in progress
	var queued []<-chan control.OpResult
	for range 3 {
		queued = append(queued, q.request(run))
	}
	close(release)
	if r := recv(t, first); r.Generation != 1 {
		t.Fatalf("first reload answered by run %d, want 1", r.Generation)
	}
	for i, ch := range queued {
		if r := recv(t, ch); r.Generation != 2 {
			t.Fatalf("queued reload %d answered by run %d, want 2 (one coalesced run)", i, r.Generation)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("%d runs for 4 requests, want 2", n)
	}
}

func recv(t *testing.T, ch <-chan control.OpResult) control.OpResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no reload result within 10s")
		return control.OpResult{}
	}
}

func TestSameWorkerIgnoresPerProcessFields(t *testing.T) {
	a := worker.Spec{Role: worker.RoleInfer, Name: "infer-0", IntraOpThreads: 2,
		Models: []worker.Model{{Name: "m", Path: "/m.onnx", Version: "1-2"}}}
	b := a
	b.Generation, b.Socket, b.MaxRequests, b.InferSockets = 7, "/x.sock", 100, []string{"/y.sock"}
	if !sameWorker(a, b) {
		t.Error("specs differing only in generation, socket, max_requests draw and infer sockets should be the same worker")
	}
	c := a
	c.IntraOpThreads = 3
	if sameWorker(a, c) {
		t.Error("a thread count change must replace the worker")
	}
	d := a
	d.Models = []worker.Model{{Name: "m", Path: "/m.onnx", Version: "1-3"}}
	if sameWorker(a, d) {
		t.Error("a model file replaced in place must replace the worker")
	}
}

func TestReloadRejectsListenAndRuntimeDirChanges(t *testing.T) {
	old := config.DefaultConfig()
	cfg := config.DefaultConfig()
	if err := reloadable(old, cfg); err != nil {
		t.Fatalf("same config: %v", err)
	}
	cfg.Listen, cfg.RuntimeDir = "127.0.0.1:9999", "/tmp/elsewhere"
	err := reloadable(old, cfg)
	if err == nil || !strings.Contains(err.Error(), "listen:") || !strings.Contains(err.Error(), "runtime_dir:") {
		t.Fatalf("want errors naming listen and runtime_dir, got %v", err)
	}
}

func TestRuntimeDirOfBrokenConfig(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"valid":  "runtime_dir: /run/a\nlisten: 127.0.0.1:1\n",
		"broken": "listen: [\nruntime_dir: \"/run/a\" # here\n",
	} {
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := config.RuntimeDirOf(path); got != "/run/a" {
			t.Errorf("%s: RuntimeDirOf = %q, want /run/a", name, got)
		}
	}
}

func TestMetricsListenNeedsAnUpgrade(t *testing.T) {
	old := config.DefaultConfig()
	cfg := config.DefaultConfig()
	cfg.Metrics.Listen = "127.0.0.1:9102"
	if err := reloadable(old, cfg); err == nil || !strings.Contains(err.Error(), "metrics.listen") {
		t.Errorf("reloadable = %v, want a metrics.listen error", err)
	}
}

// TestMaxHeaderBytesNeedsAnUpgrade: the front reads max_header_bytes
// only at start, so a reload that changes it is refused, naming the key
// and what applies it, rather than reaching new prep workers only.
func TestMaxHeaderBytesNeedsAnUpgrade(t *testing.T) {
	old := config.DefaultConfig()
	cfg := config.DefaultConfig()
	cfg.Limits.MaxHeaderBytes = 2 * old.Limits.MaxHeaderBytes
	err := reloadable(old, cfg)
	if err == nil || !strings.Contains(err.Error(), "limits.max_header_bytes") || !strings.Contains(err.Error(), "supervisor upgrade") {
		t.Errorf("reloadable = %v, want a limits.max_header_bytes error naming `supervisor upgrade`", err)
	}
	if err := reloadable(old, config.DefaultConfig()); err != nil {
		t.Errorf("reloadable of an unchanged config = %v, want nil", err)
	}
}

// TestModelSpecsWarmup: each model's warmup key reaches its worker spec as written.
func TestModelSpecsWarmup(t *testing.T) {
	c, err := config.ParseConfig([]byte("models:\n  - {name: a, path: a.onnx}\n  - {name: b, path: b.onnx, warmup: none}\n"+
		"  - {name: c, path: c.onnx, warmup: zeros}\n  - {name: d, path: c.onnx, warmup: req/d.json}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range modelSpecs(c, &modelid.Cache{}) {
		got = append(got, m.Warmup)
	}
	if want := []string{"", worker.WarmupNone, worker.WarmupZeros, "req/d.json"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("worker warm-up policies %q, want %q", got, want)
	}

}

// TestModelSpecsVersionIsContent: a model file rewritten with its old
// size and mtime (cp -p of retrained weights) gets a new version, so the
// worker specs differ and a reload or a load replaces the workers
// (sameWorker); the same bytes at another path get the same version.
func TestModelSpecsVersionIsContent(t *testing.T) {
	dir := t.TempDir()
	path, other := filepath.Join(dir, "m.onnx"), filepath.Join(dir, "copy.onnx")
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	write := func(p, content string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write(path, "weights A")
	write(other, "weights A")
	c, err := config.ParseConfig([]byte("models:\n  - {name: m, path: "+path+"}\n  - {name: n, path: "+other+"}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ids := &modelid.Cache{}
	before := modelSpecs(c, ids)
	if before[0].Version == "" || before[0].Version != before[1].Version {
		t.Fatalf("versions %q and %q: want one content identity for the same bytes", before[0].Version, before[1].Version)
	}
	write(path, "weights B") // same size, same mtime
	after := modelSpecs(c, ids)
	if after[0].Version == before[0].Version {
		t.Fatalf("a file rewritten with the same size and mtime kept version %s", before[0].Version)
	}
	if sameWorker(worker.Spec{Models: before}, worker.Spec{Models: after}) {
		t.Fatal("the worker specs before and after the rewrite are the same worker: a reload would replace nothing")
	}
	if after[1].Version != before[1].Version {
		t.Fatal("the untouched file changed version")
	}
}
