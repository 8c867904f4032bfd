package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/logtest"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// TestFailedPrivilegeDropRemovesScoreboard: the scoreboard is created
// before workers.user is resolved; when that fails, Run returns the error
// and leaves no board in /dev/shm (its removal is deferred right after it
// is created) and no runtime dir.
func TestFailedPrivilegeDropRemovesScoreboard(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.RuntimeDir = filepath.Join(t.TempDir(), "rt")
	cfg.Workers.User = "supervisor-test-no-such-user"
	t.Setenv("GOMEMLIMIT", "off") // Run must not change this test process's memory limit
	var logs logtest.Buffer
	m := New(cfg, zerolog.New(&logs), Options{Host: fakeHost(t, "vm2", "", 0)})
	err := m.Run(context.Background())
	var ae *config.AccountError
	if !errors.As(err, &ae) || ae.Group || ae.Name != cfg.Workers.User {
		t.Fatalf("Run with an unknown workers.user returned %v; want a *config.AccountError for user %q", err, cfg.Workers.User)
	}
	if !strings.Contains(logs.String(), "scoreboard created") {
		t.Fatalf("the scoreboard was never created, so the test proves nothing; log:\n%s", logs.String())
	}
	board := shm.PathFor(cfg.RuntimeDir, os.Getpid())
	if _, statErr := os.Stat(board); !errors.Is(statErr, os.ErrNotExist) {
		t.Errorf("scoreboard %s left behind after Run failed with %v (stat: %v)", board, err, statErr)
	}
	if len(shm.Boards(cfg.RuntimeDir)) != 0 {
		t.Errorf("boards left for %s: %v", cfg.RuntimeDir, shm.Boards(cfg.RuntimeDir))
	}
	if _, statErr := os.Stat(cfg.RuntimeDir); !errors.Is(statErr, os.ErrNotExist) {
		t.Errorf("runtime dir %s left behind (stat: %v)", cfg.RuntimeDir, statErr)
	}
}
