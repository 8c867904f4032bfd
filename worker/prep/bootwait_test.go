package prep

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/inferquery"
)

// bootRouter is a router whose fetches are the real GET /metadata over
// the socket, and which reports each failed one on failed.
func bootRouter(failed chan<- error) *router {
	r := newRouter(lb.New(lb.Options{Timeout: time.Minute, Logger: zerolog.Nop()}), nil, nil, zerolog.Nop())
	r.fetch = func(socket string, timeout time.Duration) ([]worker.ModelStatus, error) {
		sts, err := inferquery.Metadata(socket, timeout)
		if err != nil {
			select {
			case failed <- err:
			default:
			}
		}
		return sts, err
	}
	return r
}

// A prep worker booting while its infer worker restarts (both killed at
// once, the socket not listening yet) waits for it within boot_timeout:
// the infer worker starts only after the boot's first fetch failed, and
// the boot succeeds with its model.
func TestBootWaitsForAnInferWorkerThatComesBack(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "infer.sock")
	failed := make(chan error, 1)
	r := bootRouter(failed)
	booted := make(chan error, 1)
	go func() { booted <- r.boot([]string{socket}, time.Now().Add(time.Minute)) }()
	select {
	case err := <-failed:
		t.Logf("first fetch, before the infer worker listens: %v", err)
	case err := <-booted:
		t.Fatalf("boot returned %v before any fetch failed", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no fetch within 30s")
	}
	startModelInferAt(t, socket, []string{"m"}, nil)
	select {
	case err := <-booted:
		if err != nil {
			t.Fatalf("boot failed though the infer worker came back within boot_timeout: %v", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("boot did not return within 45s of the infer worker listening")
	}
	if _, ok := r.model("m"); !ok {
		t.Fatal("model m not learnt at boot")
	}
}

// An infer worker that answers GET /metadata slower than one fetch's
// bound (a loaded host) does not fail the boot: the boot asks again with
// a longer bound, within boot_timeout. The first answer is held until
// the fetch waiting for it gave up.
func TestBootWaitsForASlowInferWorker(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "infer.sock")
	failed := make(chan error, 1)
	r := bootRouter(failed)
	gaveUp := make(chan struct{})
	var once sync.Once
	meta, err := json.Marshal([]worker.ModelStatus{{Metadata: testMetadata("m")}})
	if err != nil {
		t.Fatal(err)
	}
	startFakeInferAt(t, socket, func(ctx *fasthttp.RequestCtx) {
		once.Do(func() { <-gaveUp })
		ctx.SetBody(meta)
	})
	booted := make(chan error, 1)
	go func() { booted <- r.boot([]string{socket}, time.Now().Add(time.Minute)) }()
	select {
	case err := <-failed:
		if !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("first fetch: %v, want a timeout", err)
		}
		close(gaveUp)
	case err := <-booted:
		t.Fatalf("boot returned %v before the held answer timed out", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the held fetch did not time out within 30s")
	}
	select {
	case err := <-booted:
		if err != nil {
			t.Fatalf("boot failed on a slow infer worker within boot_timeout: %v", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("boot did not return within 45s")
	}
	if _, ok := r.model("m"); !ok {
		t.Fatal("model m not learnt at boot")
	}
}

// An infer worker that never comes back still fails the boot, at its
// deadline, with an error that says what was asked, how long, and what
// to check.
func TestBootFailsAtItsDeadline(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "infer.sock")
	r := bootRouter(nil)
	start := time.Now()
	err := r.boot([]string{socket}, start.Add(700*time.Millisecond))
	took := time.Since(start)
	if err == nil {
		t.Fatal("boot succeeded with no infer worker")
	}
	for _, want := range []string{"fetch model metadata: no infer worker answered", socket, "until boot_timeout", "supervisor status"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if took < 700*time.Millisecond || took > 30*time.Second {
		t.Errorf("boot gave up after %s, want at its deadline (700ms)", took)
	}
	if err := r.boot(nil, start.Add(time.Minute)); err == nil || !strings.Contains(err.Error(), "no infer worker sockets in the spec") {
		t.Errorf("boot with no sockets: %v", err)
	}
}
