package loglevel

import (
	"encoding/json"
	"sync"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/supervisor/board"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/logsettings"
)

// Levels is the master's side of the logging extension
// (front.Logging): the level is zerolog's global one, set at once in the
// master and recorded in the scoreboard's header, which every worker
// follows (worker.LogLevelPoll) and workers spawned later start at.
//
// Precedence: a level set through the API lasts until a reload whose
// config changes log_level (the config's new value wins, Reload), or
// until the master restarts or upgrades (a new master starts at its
// config's). A reload that leaves log_level as it was keeps the API's.
type Levels struct {
	// Log is the master's logger.
	Log zerolog.Logger
	// Board is the master's scoreboard when a level is set (nil: none).
	Board func() *board.Board
	mu    sync.Mutex // serialises read-modify-write POSTs
}

// LogSettings is GET /v2/logging.
func (l *Levels) LogSettings() []byte {
	b, _ := json.Marshal(logsettings.Of(zerolog.GlobalLevel()))
	return b
}

// SetLogSettings is POST /v2/logging.
func (l *Levels) SetLogSettings(body []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := zerolog.GlobalLevel()
	lvl, err := logsettings.Update(cur, body)
	if err != nil {
		return nil, err
	}
	if lvl != cur {
		l.set(lvl)
		// Without a level: the change is written whatever the new one.
		l.Log.Log().Str("log_level", lvl.String()).Str("was", cur.String()).Msg("log level set through /v2/logging")
	}
	return l.LogSettings(), nil
}

// set applies lvl to the master and, through the scoreboard, its workers.
func (l *Levels) set(lvl zerolog.Level) {
	zerolog.SetGlobalLevel(lvl)
	l.Board().SetLogLevel(lvl)
}

// Reload applies a reload's log_level when it changed from old's;
// otherwise the level in force (the API's, if one was set) stays.
func (l *Levels) Reload(old, cfg *config.Config) {
	if old.LogLevel == cfg.LogLevel {
		return
	}
	if lvl, err := zerolog.ParseLevel(cfg.LogLevel); err == nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.set(lvl)
	}
}
