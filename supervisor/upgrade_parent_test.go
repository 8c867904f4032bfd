package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cloudflare/tableflip"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// tableflipChildEnv, when set, makes the test binary play the child of a
// tableflip upgrade; its value is the file the child writes its verdict to.
const tableflipChildEnv = "SV_TEST_TABLEFLIP_CHILD"

// tableflipChild becomes ready, then asks for an upgrade of its own while
// its parent (the test process) is still running, and writes to out
// whether isParentStillRunning recognised tableflip's refusal ("yes") or
// the last error it got instead. Ready makes tableflip's loop see the
// child ready on its own goroutine, so the first Upgrade may still answer
// "not ready": it asks a bounded number of times.
func tableflipChild(out string) {
	verdict := "no Upgrader"
	defer func() {
		// Written aside and renamed: the parent polls for out and must
		// never read it half written (an empty verdict).
		if os.WriteFile(out+".tmp", []byte(verdict), 0o600) == nil {
			_ = os.Rename(out+".tmp", out)
		}
		os.Exit(0)
	}()
	up, err := tableflip.New(tableflip.Options{})
	if err != nil {
		verdict = err.Error()
		return
	}
	if err := up.Ready(); err != nil {
		verdict = "ready: " + err.Error()
		return
	}
	if polltest.Wait(5*time.Second, 10*time.Millisecond, func() bool {
		err = up.Upgrade()
		return isParentStillRunning(err)
	}) {
		verdict = "yes"
		return
	}
	verdict = "never refused for a running parent; last error: " + errors.Join(err).Error()
}

// upgraderOnce and upgraderUsed let TestTableflipParentStillRunningIsRecognised
// run once per test process (tableflip refuses a second Upgrader), so
// that -count=N skips the repeats instead of failing them.
var (
	upgraderOnce sync.Mutex
	upgraderUsed bool
)

// TestTableflipParentStillRunningIsRecognised produces tableflip's
// "parent hasn't exited" from the tableflip in go.mod, with a real parent
// (this process) and child (this binary re-executed), and checks that
// isParentStillRunning recognises it: the one place the master reads an
// error's text is pinned to the library version it reads.
func TestTableflipParentStillRunningIsRecognised(t *testing.T) {
	upgraderOnce.Lock() // tableflip allows one Upgrader per process, ever: -count=N runs it once
	defer upgraderOnce.Unlock()
	if upgraderUsed {
		t.Skip("tableflip allows a single Upgrader per process; this process already made it")
	}
	upgraderUsed = true
	out := filepath.Join(t.TempDir(), "verdict")
	t.Setenv(tableflipChildEnv, out)
	up, err := tableflip.New(tableflip.Options{UpgradeTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("tableflip.New in the test process: %v", err)
	}
	defer up.Stop()
	if err := up.Ready(); err != nil {
		t.Fatal(err)
	}
	// Like the child's, this process's readiness reaches tableflip's loop
	// on its own goroutine: the first calls may be refused as not ready.
	polltest.Wait(5*time.Second, 10*time.Millisecond, func() bool {
		err = up.Upgrade()
		return err == nil
	})
	if err != nil {
		t.Fatalf("upgrade to the re-executed test binary: %v", err)
	}
	polltest.Until(t, 30*time.Second, 10*time.Millisecond, "the child's verdict", func() bool {
		_, err := os.Stat(out)
		return err == nil
	})
	verdict, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(verdict) != "yes" {
		t.Errorf("tableflip's refusal while the parent runs was not recognised: %s", verdict)
	}
}

// TestUpgradeRetriesOnlyParentStillRunning: upgradeOnceParentGone asks
// again only after tableflip's "parent hasn't exited"; any other error,
// which may come from a started child, is returned after one call.
func TestUpgradeRetriesOnlyParentStillRunning(t *testing.T) {
	childFailed := errors.New("can't start child: exec format error")
	for _, tc := range []struct {
		name    string
		answers []error
		calls   int
		want    error
	}{
		{"parent gone at once", []error{nil}, 1, nil},
		{"parent noticed on the third call", []error{errors.New(tableflipParentStillRunning), errors.New(tableflipParentStillRunning), nil}, 3, nil},
		{"child failed", []error{childFailed, nil}, 1, childFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := &scriptedUpgrader{answers: tc.answers}
			if err := upgradeOnceParentGone(up); !errors.Is(err, tc.want) {
				t.Errorf("upgradeOnceParentGone = %v, want %v", err, tc.want)
			}
			if up.calls != tc.calls {
				t.Errorf("Upgrade called %d times, want %d", up.calls, tc.calls)
			}
		})
	}
}

// scriptedUpgrader answers Upgrade calls from a script.
type scriptedUpgrader struct {
	noUpgrades
	answers []error
	calls   int
}

func (s *scriptedUpgrader) Upgrade() error {
	s.calls++
	return s.answers[min(s.calls, len(s.answers))-1]
}
