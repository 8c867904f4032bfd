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
	c := newCrashLog(nil)
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

// TestCrashLogTellsThen: a crash is passed on to then, with the time
// recorded; a kill from outside is not.
func TestCrashLogTellsThen(t *testing.T) {
	var told []time.Time
	c := newCrashLog(func(at time.Time) { told = append(told, at) })
	c.record(exitOf(t, "kill -KILL $$"))
	c.record(exitOf(t, "kill -SEGV $$"))
	if len(told) != 1 || !told[0].Equal(c.last) {
		t.Fatalf("then was told %v, want the one crash at %v", told, c.last)
	}
}
