package procinfo

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

func TestReadSelf(t *testing.T) {
	p, err := Read("", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.RSS < 1<<20 {
		t.Errorf("RSS of the test process = %d bytes, want at least 1 MiB", p.RSS)
	}
	// stat's state is the main thread's, which may sleep while this
	// goroutine runs on another thread: alive is all that holds.
	if p.State != "R" && p.State != "S" && p.State != "D" {
		t.Errorf("state of the reading process = %q, want R, S or D", p.State)
	}
	if p.UIDs[1] != uint64(os.Geteuid()) || p.GIDs[1] != uint64(os.Getegid()) {
		t.Errorf("effective ids %d/%d, want %d/%d", p.UIDs[1], p.GIDs[1], os.Geteuid(), os.Getegid())
	}
	var mask unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mask); err != nil {
		t.Fatal(err)
	}
	if len(p.CPUs) == 0 || len(p.CPUs) < mask.Count() {
		t.Errorf("allowed CPUs %v, want at least the %d of this thread's mask", p.CPUs, mask.Count())
	}
	if p.Start == 0 {
		t.Error("start time 0")
	}
	// CPU time grows with work done.
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	q, err := Read("", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if q.CPUSeconds <= p.CPUSeconds || q.Start != p.Start {
		t.Errorf("after 50ms of spinning: CPU %.2fs -> %.2fs, start %d -> %d", p.CPUSeconds, q.CPUSeconds, p.Start, q.Start)
	}
}

// TestExited: a running child has not exited; killed, it is a zombie
// until reaped (Exited), then gone (Read fails with ErrGone).
func TestExited(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if Exited("", pid) {
		t.Fatalf("running child %d reported exited", pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the killed child to be a zombie", func() bool {
		p, err := Read("", pid)
		return err == nil && p.State == "Z"
	})
	if !Exited("", pid) {
		t.Errorf("zombie %d not reported exited", pid)
	}
	_ = cmd.Wait()
	if _, err := Read("", pid); !errors.Is(err, ErrGone) {
		t.Errorf("Read of reaped pid %d: %v, want ErrGone", pid, err)
	}
	if !Exited("", pid) {
		t.Errorf("reaped %d not reported exited", pid)
	}
}

func TestThreadsOfSelf(t *testing.T) {
	threads, err := Threads("", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if cpus, ok := threads[unix.Gettid()]; !ok || len(cpus) == 0 {
		t.Errorf("this thread %d missing or without CPUs in %v", unix.Gettid(), threads)
	}
}

func TestFakeRoot(t *testing.T) {
	if _, err := Read(t.TempDir(), 1); !errors.Is(err, ErrGone) {
		t.Errorf("Read from an empty root: %v, want ErrGone", err)
	}
	if _, err := Read("/no/such/proc", 1); err == nil {
		t.Error("Read from a missing root succeeded")
	}
}

func TestCPUIdleFake(t *testing.T) {
	root := t.TempDir()
	stat := "cpu  10 0 10 300 20 0 0 0 0 0\ncpu0 5 0 5 100 10 0 0 0 0 0\ncpu1 5 0 5 200 10 0 0 0 0 0\n" +
		"intr 0\nctxt 0\nbtime 0\nprocesses 0\nprocs_running 1\nprocs_blocked 0\n"
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	idle, err := CPUIdle(root)
	if err != nil {
		t.Fatalf("CPUIdle: %v", err)
	}
	// procfs reads USER_HZ 100: 100 + 10 ticks are 1.1 s.
	if len(idle) != 2 || math.Abs(idle[0]-1.1) > 1e-9 || math.Abs(idle[1]-2.1) > 1e-9 {
		t.Errorf("CPUIdle = %v, want map[0:1.1 1:2.1]", idle)
	}
	if _, err := CPUIdle(t.TempDir()); err == nil {
		t.Error("CPUIdle of a root without stat succeeded")
	}
}

func TestCPUIdleOfThisHost(t *testing.T) {
	idle, err := CPUIdle("")
	if err != nil || len(idle) == 0 {
		t.Fatalf("CPUIdle of /proc = %v, %v; want one entry per CPU", idle, err)
	}
}
