package supervisor

import (
	"os/exec"
	"testing"
	"time"
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

// TestCrashedSinceWaitsForTheReap: a kill from outside is not recorded; a
// crash recorded while crashedSince waits ends the wait with true.
func TestCrashedSinceWaitsForTheReap(t *testing.T) {
	c := newCrashLog()
	since := time.Now()
	c.record(exitOf(t, "kill -KILL $$"))
	if c.crashedSince(since, 0) {
		t.Fatal("a SIGKILL counts as a crash")
	}
	crash := exitOf(t, "kill -FPE $$")
	go c.record(crash)
	if !c.crashedSince(since, 30*time.Second) {
		t.Fatal("crashedSince did not see the crash recorded while it waited")
	}
	if c.crashedSince(time.Now().Add(time.Hour), 0) {
		t.Fatal("a crash counts for a request sent after it")
	}
}
