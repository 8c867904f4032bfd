package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
)

// TestUpgradesUnderLoad upgrades twice to rebuilt binaries, then once to a
// binary that exits before it is ready, all under load: no request may
// fail, each upgrade hands over to a new master (new pid, new version, new
// workers, MAINPID= sent to systemd) whose every listener (HTTP, gRPC,
// metrics) answers once the old master exited, and the failed one leaves
// the old master serving.
func TestUpgradesUnderLoad(t *testing.T) {
	needORT(t)
	bin := filepath.Join(t.TempDir(), "supervisor")
	install(t, binPath, bin)
	rebuilt := filepath.Join(t.TempDir(), "supervisor-rebuilt")
	build := exec.Command("go", "build", "-o", rebuilt,
		"-ldflags", "-X github.com/supervisor-dev/supervisor/supervisor.Version=rebuilt-for-test", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build a second binary: %v\n%s", err, out)
	}
	n := listenNotify(t)
	in := startInstance(t, options{prepWorkers: 2, bin: bin, env: []string{n.env()}})
	n.expect(t, "READY=1")
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	l := startLoad(in, 4, "/v2/models/mlp/infer", body)
	l.waitFor(t, 200)
	l.phase.Store(events)

	first := in.status()
	prev := first
	for i, next := range []struct{ bin, version string }{{rebuilt, "rebuilt-for-test"}, {binPath, first.Version}} {
		install(t, next.bin, bin)
		out, err := in.cli("upgrade")
		if err != nil {
			t.Fatalf("upgrade %d: %v\n%s", i+1, err, out)
		}
		st := in.status()
		if st.PID == prev.PID {
			t.Fatalf("upgrade %d: the same master (pid %d) still serves\n%s", i+1, st.PID, out)
		}
		if !strings.Contains(out, fmt.Sprint(st.PID)) {
			t.Errorf("upgrade %d: output does not name the new master %d:\n%s", i+1, st.PID, out)
		}
		n.expect(t, fmt.Sprintf("MAINPID=%d", st.PID), "READY=1")
		// The CLI returns as the old master exits (its last act is the
		// answer); it is reaped by its parent or init.
		pollUntil(t, 10*time.Second, fmt.Sprintf("the old master %d exits", prev.PID), func() bool { return processGone(prev.PID) })
		for _, w := range prev.Workers {
			pollUntil(t, 10*time.Second, fmt.Sprintf("old worker %s (pid %d) exits", w.Name, w.PID), func() bool { return processGone(w.PID) })
		}
		// The old master is gone: every listener it handed over still
		// accepts (its exit once shut the metrics socket down for both).
		for _, err := range listenersAnswer(in) {
			t.Errorf("upgrade %d: after the old master exited: %v", i+1, err)
		}
		// Each master has its own scoreboard: status reads the new one's,
		// and the old one removed its own on the way out.
		if r := statusReport(t, in); r.PID != st.PID || r.Scoreboard != shm.PathFor(in.runtimeDir, st.PID) || len(r.Processes) != len(st.Workers) {
			t.Errorf("upgrade %d: status read master %d's board %q with %d processes; want master %d's with %d",
				i+1, r.PID, r.Scoreboard, len(r.Processes), st.PID, len(st.Workers))
		}
		if _, err := os.Stat(shm.PathFor(in.runtimeDir, prev.PID)); !os.IsNotExist(err) {
			t.Errorf("upgrade %d: the old master's scoreboard is still there (%v)", i+1, err)
		}
		if st.Generation != prev.Generation+1 || !st.Ready || len(st.Workers) != len(prev.Workers) || st.Version != next.version {
			t.Fatalf("upgrade %d: generation %d (want %d), ready %v, %d workers, version %q (want %q)",
				i+1, st.Generation, prev.Generation+1, st.Ready, len(st.Workers), st.Version, next.version)
		}
		prev = st
		l.waitFor(t, 50)
	}
	<-in.exited // the first master exited cleanly
	if in.err != nil {
		t.Fatalf("the first master exited with %v", in.err)
	}

	// A binary that fails before it is ready: the old master keeps serving.
	broken := "#!/bin/sh\necho 'broken build: exiting' >&2\nexit 3\n"
	if err := os.WriteFile(bin+".new", []byte(broken), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	out, err := in.cli("upgrade")
	if err == nil {
		t.Fatalf("an upgrade to a binary that exits succeeded:\n%s", out)
	}
	if !strings.Contains(out, "did not become ready") {
		t.Errorf("the failed upgrade's message does not say what happened:\n%s", out)
	}
	st := in.status()
	if st.PID != prev.PID || !st.Ready || st.LastUpgrade == nil || st.LastUpgrade.OK {
		t.Fatalf("after a failed upgrade: pid %d (want %d), ready %v, last upgrade %+v", st.PID, prev.PID, st.Ready, st.LastUpgrade)
	}
	l.waitFor(t, 50)
	l.finish(t, "2 upgrades and 1 failed upgrade")

	install(t, binPath, bin)
	if out, err := in.cli("stop"); err != nil {
		t.Fatalf("stop the upgraded master: %v\n%s", err, out)
	}
}

// install puts a copy of src at dst the way a package manager does: a new
// file renamed over the old one, which a running master keeps open.
func install(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst+".new", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dst+".new", dst); err != nil {
		t.Fatal(err)
	}
}
