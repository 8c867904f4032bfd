// Package polltest waits in tests for state that has no change
// notification to wait on (a counter in shared memory, a slot coming back,
// a kernel noticing a closed socket): it asks again on a ticker until the
// condition holds or a deadline passes. Every wait is bounded in time, and
// so in the number of looks.
//
// Prefer a channel or a readiness signal where the code under test offers
// one; this is for the rest.
package polltest

import (
	"testing"
	"time"
)

// Wait calls cond every interval until it holds (true) or within has
// passed (false). It does not touch a testing.T, so any goroutine may
// call it, a server's handler included.
func Wait(within, interval time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-deadline.C:
			return cond()
		}
	}
}

// Until is Wait that fails the test, naming what it waited for, when
// within passes first. Call it from the test's goroutine.
func Until(t testing.TB, within, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Wait(within, interval, cond) {
		t.Fatalf("timed out after %s waiting for: %s", within, what)
	}
}
