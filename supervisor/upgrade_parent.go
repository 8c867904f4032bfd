package supervisor

import (
	"strings"
	"time"
)

// tableflipParentStillRunning is the message of the error tableflip
// v1.2.3's Upgrade returns when it is asked to upgrade before it has seen
// the previous master exit: `request <- errors.New("parent hasn't exited")`
// in (*Upgrader).run, upgrader.go. That error is created inline and not
// exported, and tableflip wraps none of its errors, so neither errors.Is
// nor errors.As can tell it from a child that failed to start; nor can the
// caller observe the state it depends on (run's copy of parent.exited).
// This is the only place its text is read, and
// TestTableflipParentStillRunningIsRecognised pins it against the tableflip
// in go.mod by producing the error from a real parent and child: a
// tableflip upgrade that changes the message fails that test.
const tableflipParentStillRunning = "parent hasn't exited"

// isParentStillRunning reports whether err is tableflip's refusal to
// upgrade before it has noticed that the previous master exited: an
// answer given before any child is started, so asking again is safe.
func isParentStillRunning(err error) bool {
	return err != nil && strings.Contains(err.Error(), tableflipParentStillRunning)
}

// Bounds of upgradeOnceParentGone: tableflip learns of the previous
// master's exit on its own goroutine, which it does not let a caller wait
// on, so the upgrade polls (50 x 20ms = 1s; it takes microseconds).
const (
	parentGoneTries    = 50
	parentGoneInterval = 20 * time.Millisecond
)

// upgradeOnceParentGone calls up.Upgrade, asking again while tableflip
// says the previous master has not exited yet: WaitForParent returns as
// soon as the previous master's pipe closes, which can be just before
// tableflip's own loop notices the same. Any other error is returned at
// once: it may come from a child that was started, which must not be
// started twice.
func upgradeOnceParentGone(up Upgrader) error {
	var err error
	for range parentGoneTries {
		if err = up.Upgrade(); !isParentStillRunning(err) {
			return err
		}
		time.Sleep(parentGoneInterval)
	}
	return err
}
