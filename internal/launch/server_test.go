package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
)

// mlpConfig serves only the generated MLP: the fastest model to boot.
func mlpConfig(t *testing.T, lib string) func(Layout) (string, error) {
	models := t.TempDir()
	if err := onnxmodel.WriteAll(models); err != nil {
		t.Fatal(err)
	}
	return func(l Layout) (string, error) {
		return fmt.Sprintf(`listen: 127.0.0.1:%d
runtime_dir: %s
onnxruntime_library: %s
shutdown_timeout: 10s
boot_timeout: 60s
models: [{name: mlp, path: %s}]
prep: {workers: 1}
infer: {workers: 1, intra_op_threads: 1}
placement: {overcommit: true}
metrics: {listen: "127.0.0.1:%d"}
grpc: {listen: "127.0.0.1:%d"}
`, l.Port, l.RuntimeDir, lib, filepath.Join(models, "mlp.onnx"), l.MetricsPort, l.GRPCPort), nil
	}
}

// TestStartReadyStop runs the real binary: ready, alive, and after Stop
// exited with status 0 and its dir gone.
func TestStartReadyStop(t *testing.T) {
	bin := os.Getenv("SUPERVISOR_BIN")
	if bin == "" {
		t.Skip("SUPERVISOR_BIN is unset: run `make build` and set SUPERVISOR_BIN=$PWD/bin/supervisor to start a real supervisor")
	}
	lib, err := ort.FindLibrary()
	if err != nil {
		t.Skipf("ONNX Runtime library not found (run `make setup` or set ORT_LIBRARY): %v", err)
	}
	s, err := Start(Options{Bin: bin, Config: mlpConfig(t, lib)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(5 * time.Second)
	if err := s.WaitReady(90*time.Second, 50*time.Millisecond); err != nil {
		t.Fatalf("%v\n%s", err, readLog(s))
	}
	if !s.Alive() || s.PID() <= 0 {
		t.Fatalf("ready but Alive()=%v PID()=%d", s.Alive(), s.PID())
	}
	s.Stop(30 * time.Second)
	select {
	case <-s.Exited():
	default:
		t.Fatal("Stop returned before the process exited")
	}
	if s.Alive() {
		t.Fatal("Alive() after Stop")
	}
	if s.waitErr != nil {
		t.Fatalf("supervisor exited with %v on SIGTERM, want status 0", s.waitErr)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("dir %s still there after Stop (stat: %v)", s.Dir, err)
	}
}

// TestExitedAtOnce: a binary that exits at once is reported as ErrExited
// well before the timeout, and KeepDir keeps the log but not RuntimeDir.
func TestExitedAtOnce(t *testing.T) {
	s, err := Start(Options{Bin: "/bin/false", KeepDir: true, Config: func(l Layout) (string, error) {
		return "", os.Mkdir(l.RuntimeDir, 0o755)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(s.Dir) })
	t0 := time.Now()
	err = s.WaitReady(60*time.Second, 50*time.Millisecond)
	if !errors.Is(err, ErrExited) {
		t.Fatalf("WaitReady = %v, want ErrExited", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("ErrExited after %s, want well under the 60s timeout", d)
	}
	s.Stop(time.Second)
	if _, err := os.Stat(s.Log); err != nil {
		t.Fatalf("KeepDir: log gone after Stop: %v", err)
	}
	if _, err := os.Stat(s.RuntimeDir); !os.IsNotExist(err) {
		t.Fatalf("KeepDir: runtime dir %s still there after Stop (stat: %v)", s.RuntimeDir, err)
	}
}

// TestNotReady: a process that runs but never listens gives ErrNotReady
// after the timeout, and Stop ends it and removes the dir.
func TestNotReady(t *testing.T) {
	script := filepath.Join(t.TempDir(), "silent")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Start(Options{Bin: script, Config: func(Layout) (string, error) { return "", nil }})
	if err != nil {
		t.Fatal(err)
	}
	err = s.WaitReady(300*time.Millisecond, 50*time.Millisecond)
	if !errors.Is(err, ErrNotReady) {
		t.Fatalf("WaitReady = %v, want ErrNotReady", err)
	}
	if !s.Alive() {
		t.Fatal("the silent process died on its own")
	}
	s.Stop(10 * time.Second)
	if s.Alive() {
		t.Fatal("Alive() after Stop")
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("dir %s still there after Stop (stat: %v)", s.Dir, err)
	}
}

// TestStartFailureLeavesNothing: a Config error and a missing binary both
// fail Start and leave no temp dir behind.
func TestStartFailureLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	errCfg := errors.New("no config")
	if _, err := Start(Options{Bin: "/bin/false", Config: func(Layout) (string, error) { return "", errCfg }}); !errors.Is(err, errCfg) {
		t.Fatalf("Start with a failing Config = %v, want its error", err)
	}
	if _, err := Start(Options{Bin: filepath.Join(tmp, "missing"), Config: func(Layout) (string, error) { return "", nil }}); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("failed Starts left %d entries in TMPDIR, first %s", len(left), left[0].Name())
	}
}

func readLog(s *Server) string {
	b, _ := os.ReadFile(s.Log)
	return string(b)
}
