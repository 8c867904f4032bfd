package shm

import (
	"path/filepath"
	"testing"
)

// newBoard creates a board in a temporary directory, removed when the test
// ends.
func newBoard(t testing.TB, slots int) *Scoreboard {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.scoreboard")
	b, err := Create(path, slots, 4242, 7)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
