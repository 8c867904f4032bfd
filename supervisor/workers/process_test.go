package workers

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// helperEnv selects a behaviour when the test binary is re-executed as a
// worker (the Spawner runs `<exe> worker`).
const helperEnv = "SV_TEST_WORKER"

func TestMain(m *testing.M) {
	if b := os.Getenv(helperEnv); b != "" {
		helperWorker(b)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperWorker is a fake worker with a scripted behaviour.
func helperWorker(behaviour string) {
	spec, err := worker.SpecFromEnv()
	if err != nil {
		os.Exit(90)
	}
	switch behaviour {
	case "ready":
		rt := worker.Start(spec)
		srv := &fasthttp.Server{Handler: rt.Count(func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") })}
		if err := rt.Serve(srv); err != nil {
			os.Exit(2)
		}
	case "slow":
		rt := worker.Start(spec)
		srv := &fasthttp.Server{Handler: rt.Count(slowHandler)}
		if err := rt.Serve(srv); err != nil {
			os.Exit(2)
		}
	case "fail-boot":
		worker.Start(spec).Fail(errors.New("model file is corrupt"))
	case "crash":
		os.Exit(3)
	case "models":
		modelsWorker(spec) // modelreport_test.go
	case "hang":
		worker.Start(spec)
		select {}
	case "ignore-sigterm":
		signal.Ignore(syscall.SIGTERM)
		rt := worker.Start(spec)
		srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {}}
		_ = rt.Serve(srv) // never sees SIGTERM
		select {}
	}
}

// slowEnv names the directory through which a "slow" helper's /slow
// request says it is in flight (file "entered") and is let finish (file
// "release", awaited at most 30s).
const slowEnv = "SV_TEST_SLOW_DIR"

// slowHandler answers "ok"; /slow only once it is released (slowEnv).
func slowHandler(ctx *fasthttp.RequestCtx) {
	if string(ctx.Path()) == "/slow" {
		dir := os.Getenv(slowEnv)
		_ = os.WriteFile(filepath.Join(dir, "entered"), nil, 0o644)
		polltest.Wait(30*time.Second, 10*time.Millisecond, func() bool {
			_, err := os.Stat(filepath.Join(dir, "release"))
			return err == nil
		})
	}
	ctx.SetBodyString("ok")
}

func testSpawner(t *testing.T, behaviour string) (Spawner, worker.Spec) {
	t.Helper()
	t.Setenv(helperEnv, behaviour)
	// The race runtime sleeps 1s at exit by default, which would make a
	// clean drain look like one that needed killing.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "svp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return Spawner{Exe: exe}, worker.Spec{Role: worker.RolePrep, Name: "prep-0", Socket: filepath.Join(dir, "w.sock"),
		DrainTimeout: time.Second, HeartbeatInterval: 50 * time.Millisecond}
}

// readyProcess spawns a helper worker with behaviour and waits until it is
// ready.
func readyProcess(t *testing.T, behaviour string) (*Process, worker.Spec) {
	t.Helper()
	sp, spec := testSpawner(t, behaviour)
	p, err := sp.spawn(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.waitReady(30 * time.Second); err != nil {
		t.Fatalf("waitReady: %v", err)
	}
	return p, spec
}

func TestProcessReadyThenStop(t *testing.T) {
	p, spec := readyProcess(t, "ready")
	if _, err := os.Stat(spec.Socket); err != nil {
		t.Fatalf("ready worker has no socket: %v", err)
	}
	p.Stop(10 * time.Second)
	if p.err != nil {
		t.Fatalf("SIGTERM exit = %v, want status 0", p.err)
	}
}

func TestProcessBootFailures(t *testing.T) {
	cases := []struct {
		behaviour string
		want      string
	}{
		{"fail-boot", "model file is corrupt"},
		{"crash", "exit status 3"},
		{"hang", "boot_timeout"},
	}
	for _, c := range cases {
		t.Run(c.behaviour, func(t *testing.T) {
			sp, spec := testSpawner(t, c.behaviour)
			p, err := sp.spawn(spec)
			if err != nil {
				t.Fatal(err)
			}
			err = p.waitReady(2 * time.Second)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("waitReady = %v, want an error mentioning %q", err, c.want)
			}
			p.kill()
		})
	}
}

func TestProcessIgnoringSIGTERMIsKilledAfterGrace(t *testing.T) {
	p, _ := readyProcess(t, "ignore-sigterm")
	p.Stop(200 * time.Millisecond)
	if p.err == nil || !strings.Contains(p.err.Error(), "killed") {
		t.Fatalf("exit = %v, want killed", p.err)
	}
}

func TestWorkerExitsWhenMasterEndsLivenessPipe(t *testing.T) {
	p, _ := readyProcess(t, "ready")
	p.liveness.Close() // what the kernel does when the master dies
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.kill()
		t.Fatal("worker kept running after its liveness pipe closed")
	}
}

// testLifecycle is a fast lifecycle for position tests.
func testLifecycle() *Lifecycle {
	return &Lifecycle{bootTimeout: 30 * time.Second, stopDrain: time.Second, recycleDrain: time.Second,
		heartbeatTimeout: 2 * time.Second, backoffBase: 10 * time.Millisecond, backoffMax: 100 * time.Millisecond,
		degradedAfter: 2, surge: make(chan struct{}, 1)}
}

// testPosition returns a position running the helper behaviour, with its changes
// and retirements reported on channels.
func testPosition(t *testing.T, behaviour string, lc *Lifecycle) (*Position, chan struct{}, chan *Process) {
	t.Helper()
	sp, spec := testSpawner(t, behaviour)
	changed := make(chan struct{}, 64)
	retired := make(chan *Process, 8)
	hooks := Hooks{
		Changed: func(*Position) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
		Retire: func(_ *Position, p *Process, _ time.Duration) {
			p.Stop(time.Second)
			retired <- p
		},
	}
	return NewPosition(spec, lc, filepath.Dir(spec.Socket), sp, hooks, zerolog.Nop()), changed, retired
}

// bootPosition starts s, stops it when the test ends, and waits for its first
// boot.
func bootPosition(t *testing.T, s *Position) {
	t.Helper()
	booted := make(chan error, 1)
	s.Start(booted)
	t.Cleanup(s.StopAndWait)
	if err := <-booted; err != nil {
		t.Fatal(err)
	}
}

// waitPosition waits for cond on the position's change notifications, bounded.
func waitPosition(t *testing.T, s *Position, changed <-chan struct{}, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !cond() {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s: %+v", what, s.Status())
		}
	}
}

func TestPositionRestartsCrashedWorkerWithBackoff(t *testing.T) {
	s, changed, _ := testPosition(t, "ready", testLifecycle())
	bootPosition(t, s)
	first := s.Serving()
	_ = first.cmd.Process.Kill()
	waitPosition(t, s, changed, "a restarted worker", func() bool {
		p := s.Serving()
		return p != nil && p != first
	})
	st := s.Status()
	if st.Restarts != 1 || !strings.Contains(st.LastExit, "killed") || st.State != stateReady {
		t.Fatalf("status after restart = %+v", st)
	}
}

func TestPositionRecyclesAfterMaxRequestsSurgeFirst(t *testing.T) {
	lc := testLifecycle()
	lc.recycle = config.Recycle{MaxRequests: 3, MaxRequestsJitter: 2}
	s, changed, retired := testPosition(t, "ready", lc)
	bootPosition(t, s)
	first := s.Serving()
	if n := first.spec.MaxRequests; n < 3 || n > 5 {
		t.Fatalf("max_requests with jitter = %d, want 3..5", n)
	}
	for i := 0; i < first.spec.MaxRequests; i++ {
		if err := getOK(first.spec.Socket); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	waitPosition(t, s, changed, "a replacement", func() bool { return s.Serving() != first })
	select {
	case old := <-retired:
		if old != first {
			t.Fatal("retired a process other than the recycled one")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the recycled worker was not retired")
	}
	// Surge-first: the replacement was serving before the old one was
	// stopped, and the old one exited cleanly after its drain.
	if first.err != nil {
		t.Fatalf("recycled worker exited with %v, want a clean drain", first.err)
	}
	if st := s.Status(); st.Recycles != 1 || st.Restarts != 0 || st.State != stateReady {
		t.Fatalf("status = %+v", st)
	}
	if err := getOK(s.Serving().spec.Socket); err != nil {
		t.Fatalf("replacement does not serve: %v", err)
	}
}

func TestPositionKillsWorkerThatStopsHeartbeating(t *testing.T) {
	lc := testLifecycle()
	lc.heartbeatTimeout = 300 * time.Millisecond
	s, changed, _ := testPosition(t, "ready", lc)
	s.tmpl.HeartbeatInterval = 50 * time.Millisecond
	bootPosition(t, s)
	first := s.Serving()
	if err := first.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitPosition(t, s, changed, "the hung worker replaced", func() bool {
		p := s.Serving()
		return p != nil && p != first
	})
	if st := s.Status(); st.Restarts != 1 || !strings.Contains(st.LastExit, "killed") {
		t.Fatalf("status = %+v", st)
	}
}

func TestPositionMarksRepeatedBootFailuresDegraded(t *testing.T) {
	s, changed, _ := testPosition(t, "ready", testLifecycle())
	bootPosition(t, s)
	t.Setenv(helperEnv, "fail-boot") // every later boot fails
	_ = s.Serving().cmd.Process.Kill()
	waitPosition(t, s, changed, "degraded", func() bool { return s.Status().State == stateDegraded })
}

// getOK does one GET on a worker's socket.
func getOK(socket string) error { return getPathOK(socket, "/") }

// getPathOK does one GET of path on a worker's socket.
func getPathOK(socket, path string) error {
	c := &fasthttp.HostClient{Addr: "w", Dial: func(string) (net.Conn, error) { return net.Dial("unix", socket) }}
	defer c.CloseIdleConnections() // a draining worker waits for its clients to leave
	code, _, err := c.Get(nil, "http://w"+path)
	if err == nil && code != 200 {
		err = fmt.Errorf("status %d", code)
	}
	return err
}

// TestPositionStopsOnceFromManyStoppers stops a serving position from several
// goroutines at once (shutdown and a reload that removed the position both
// do): no panic, every caller returns only once the worker is reaped.
func TestPositionStopsOnceFromManyStoppers(t *testing.T) {
	s, _, _ := testPosition(t, "ready", testLifecycle())
	bootPosition(t, s)
	p := s.Serving()
	done := make(chan struct{}, 4)
	for range 4 {
		go func() {
			s.StopAndWait()
			done <- struct{}{}
		}()
	}
	for i := range 4 {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("stopper %d still waiting after 30s", i)
		}
		select {
		case <-p.exited:
		default:
			t.Fatalf("stopAndWait returned before worker pid %d was reaped", p.PID())
		}
	}
}

// TestPositionStoppedBeforeStartNeverSpawns: a position stopped before it starts
// (a reload added it while the master shut down) reports ErrStopping and
// spawns nothing.
func TestPositionStoppedBeforeStartNeverSpawns(t *testing.T) {
	s, _, _ := testPosition(t, "ready", testLifecycle())
	s.StopAndWait()
	booted := make(chan error, 1)
	s.Start(booted)
	if err := <-booted; !errors.Is(err, ErrStopping) {
		t.Fatalf("first boot of a stopped position: %v, want ErrStopping", err)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("done not closed for a position stopped before it started")
	}
	if st := s.Status(); st.PID != 0 || st.State != stateStopped {
		t.Fatalf("status of a position stopped before it started: %+v", st)
	}
	s.StopAndWait() // again: still safe
}

// TestStartPlacedLibraryPath: a GPU worker starts with its spec's
// LibraryPath as LD_LIBRARY_PATH (where the master found the CUDA
// libraries) beside CUDA_VISIBLE_DEVICES; a CPU worker keeps the
// inherited one.
func TestStartPlacedLibraryPath(t *testing.T) {
	t.Setenv("LD_LIBRARY_PATH", "/inherited")
	cpus, err := affinity.AllowedCPUs()
	if err != nil || cpus.IsEmpty() {
		t.Skip("no CPU list:", err)
	}
	one, _, _ := strings.Cut(strings.Split(cpus.String(), ",")[0], "-")
	for _, c := range []struct {
		spec worker.Spec
		want string
	}{
		{worker.Spec{Name: "infer-0", GPU: "GPU-fake-0", LibraryPath: "/wheels/nvidia/cublas/lib:/inherited"}, "/wheels/nvidia/cublas/lib:/inherited GPU-fake-0\n"},
		{worker.Spec{Name: "infer-0", LibraryPath: "/ignored"}, "/inherited\n"},
	} {
		c.spec.CPUs = one
		cmd := exec.Command("sh", "-c", `echo $LD_LIBRARY_PATH $CUDA_VISIBLE_DEVICES`)
		cmd.Env = os.Environ()
		var out strings.Builder
		cmd.Stdout = &out
		if err := startPlaced(cmd, c.spec); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil || out.String() != c.want {
			t.Errorf("%+v: the worker saw %q, %v; want %q", c.spec, out.String(), err, c.want)
		}
	}
}
