package workers

import (
	"os/exec"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/quarantine"
	"github.com/supervisor-dev/supervisor/worker"
)

// exitOf runs a shell script and returns its Wait error.
func exitOf(t *testing.T, script string) error {
	t.Helper()
	return exec.Command("sh", "-c", script).Run()
}

// TestIsCrash: a fault signal or an exit status of its own is a crash; a
// kill from outside and a clean exit are not.
func TestIsCrash(t *testing.T) {
	for script, want := range map[string]bool{
		"kill -FPE $$": true, "kill -SEGV $$": true, "kill -ABRT $$": true, "exit 2": true,
		"kill -KILL $$": false, "kill -TERM $$": false, "exit 0": false,
	} {
		if got := isCrash(exitOf(t, script)); got != want {
			t.Errorf("isCrash(%q) = %v, want %v", script, got, want)
		}
	}
}

// exited is a reaped process of socket that ended as script does.
func exited(t *testing.T, socket, script string) *Process {
	return &Process{spec: worker.Spec{Socket: socket}, err: exitOf(t, script), atWorkRead: true,
		atWork: shm.AtWork{Units: map[uint16][]uint64{1: {7}}}}
}

// TestExitOfWaitsForTheReap: an exit is found by its worker's socket,
// crash or kill, with what the worker was at work on; one recorded while
// exitOf waits ends the wait; another worker's is not taken for it.
func TestExitOfWaitsForTheReap(t *testing.T) {
	c := NewCrashLog(nil)
	c.Record(exited(t, "a.sock", "kill -KILL $$"))
	if e, ok := c.ExitOf("a.sock", 0); !ok || e.Crashed || !e.Read || e.Work.Units[1][0] != 7 {
		t.Fatalf("exit of a.sock = %+v, %v; want a kill with its work", e, ok)
	}
	if _, ok := c.ExitOf("b.sock", 0); ok {
		t.Fatal("another worker's exit was taken for b.sock's")
	}
	go c.Record(exited(t, "b.sock", "kill -FPE $$"))
	if e, ok := c.ExitOf("b.sock", 30*time.Second); !ok || !e.Crashed {
		t.Fatalf("exitOf did not see the crash recorded while it waited: %+v, %v", e, ok)
	}
}

// TestCrashLogTellsThen: a crash is passed on to then; a kill from
// outside is not.
func TestCrashLogTellsThen(t *testing.T) {
	var told []quarantine.Exit
	c := NewCrashLog(func(e quarantine.Exit) { told = append(told, e) })
	c.Record(exited(t, "a.sock", "kill -KILL $$"))
	c.Record(exited(t, "b.sock", "kill -SEGV $$"))
	if len(told) != 1 || told[0].Socket != "b.sock" || !told[0].Crashed {
		t.Fatalf("then was told %+v, want the one crash of b.sock", told)
	}
}
