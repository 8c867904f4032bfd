package supervisor

import (
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/worker"
)

// helperEnv selects a behaviour when the test binary is re-executed as a
// worker (the spawner runs `<exe> worker`).
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
		srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }}
		if err := rt.Serve(srv); err != nil {
			os.Exit(2)
		}
	case "fail-boot":
		worker.Start(spec).Fail(errors.New("model file is corrupt"))
	case "crash":
		os.Exit(3)
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

func testSpawner(t *testing.T, behaviour string) (spawner, worker.Spec) {
	t.Helper()
	t.Setenv(helperEnv, behaviour)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "svp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return spawner{exe: exe}, worker.Spec{Role: worker.RolePrep, Name: "prep-0", Socket: filepath.Join(dir, "w.sock"), DrainTimeout: time.Second}
}

func TestProcessReadyThenStop(t *testing.T) {
	sp, spec := testSpawner(t, "ready")
	p, err := sp.spawn(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.waitReady(30 * time.Second); err != nil {
		t.Fatalf("waitReady: %v", err)
	}
	if _, err := os.Stat(spec.Socket); err != nil {
		t.Fatalf("ready worker has no socket: %v", err)
	}
	p.stop(10 * time.Second)
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
	sp, spec := testSpawner(t, "ignore-sigterm")
	p, err := sp.spawn(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.waitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	p.stop(200 * time.Millisecond)
	if p.err == nil || !strings.Contains(p.err.Error(), "killed") {
		t.Fatalf("exit = %v, want killed", p.err)
	}
}

func TestWorkerExitsWhenMasterEndsLivenessPipe(t *testing.T) {
	sp, spec := testSpawner(t, "ready")
	p, err := sp.spawn(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.waitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	p.liveness.Close() // what the kernel does when the master dies
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.kill()
		t.Fatal("worker kept running after its liveness pipe closed")
	}
}

func TestSlotRestartsCrashedWorkerWithBackoff(t *testing.T) {
	sp, spec := testSpawner(t, "ready")
	changed := make(chan struct{}, 16)
	s := &slot{spec: spec, spawner: sp, bootTimeout: 30 * time.Second, drain: time.Second,
		log: zerolog.Nop(), changed: func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}}
	booted := make(chan error, 1)
	s.start(booted)
	defer s.stopAndWait()
	if err := <-booted; err != nil {
		t.Fatal(err)
	}
	first := s.readyProcess()
	if first == nil {
		t.Fatal("no ready process after boot")
	}
	_ = first.cmd.Process.Kill()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("not restarted: %+v", s.status())
		}
		if p := s.readyProcess(); p != nil && p != first {
			break
		}
	}
	st := s.status()
	if st.Restarts != 1 || !strings.Contains(st.LastExit, "killed") || st.State != stateReady {
		t.Fatalf("status after restart = %+v", st)
	}
}
