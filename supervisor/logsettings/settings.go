// Package logsettings maps Triton's logging extension (GET and POST
// /v2/logging, gRPC LogSettings) onto the one thing supervisor's logs
// have: a zerolog level threshold, as log_level sets it in the config.
//
// Triton's settings are independent switches; a threshold is not, so the
// mapping is:
//
//	log_level   log_verbose_level  log_info  log_warning  log_error
//	debug       1                  true      true         true
//	info        0                  true      true         true
//	warn        0                  false     true         true
//	error       0                  false     false        true
//
// Any log_verbose_level above 0 is debug (read back as 1: zerolog has no
// finer verbosity). log_error false is refused: errors are what an
// operator needs to act on, and the config cannot turn them off either.
// log_format is "default" only: our lines are JSON (zerolog) with RFC 3339
// timestamps whatever Triton's "ISO8601" would change, and answering it
// would say the format changed when it did not. log_file is "" only: the
// logs go to stderr (the journal under systemd, which rotates and ships
// them), and a path taken from an API request would let any key holder
// write files as the master.
//
// A POST names some settings; the others follow from the current level,
// the named ones winning: {"log_info":false} from debug drops the
// verbosity too (warn), {"log_verbose_level":1} from error turns info and
// warning on (debug). Named settings that contradict each other (info on,
// warning off) are refused with the reason.
package logsettings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rs/zerolog"
)

// Settings are Triton's logging settings as GET /v2/logging answers them.
type Settings struct {
	File         string `json:"log_file"`
	Info         bool   `json:"log_info"`
	Warning      bool   `json:"log_warning"`
	Error        bool   `json:"log_error"`
	VerboseLevel uint32 `json:"log_verbose_level"`
	Format       string `json:"log_format"`
}

// Triton's setting keys.
const (
	KeyFile    = "log_file"
	KeyInfo    = "log_info"
	KeyWarning = "log_warning"
	KeyError   = "log_error"
	KeyVerbose = "log_verbose_level"
	KeyFormat  = "log_format"
)

// Keys are the settings a POST may name.
var Keys = []string{KeyFile, KeyInfo, KeyWarning, KeyError, KeyVerbose, KeyFormat}

// FormatDefault is the one log_format served: our JSON lines.
const FormatDefault = "default"

// Of returns the settings level stands for (the table in the package
// doc); trace counts as debug, levels above error as error.
func Of(level zerolog.Level) Settings {
	s := Settings{Format: FormatDefault, Error: true}
	s.Warning = level <= zerolog.WarnLevel
	s.Info = level <= zerolog.InfoLevel
	if level <= zerolog.DebugLevel {
		s.VerboseLevel = 1
	}
	return s
}

// Level is the level s stands for, or why s stands for none.
func (s Settings) Level() (zerolog.Level, error) {
	switch {
	case s.File != "":
		return 0, fmt.Errorf("log_file %q: logs go to stderr (the journal under systemd) and cannot be sent to a file from the API; send \"\" or leave log_file out", s.File)
	case s.Format != FormatDefault:
		return 0, fmt.Errorf("log_format %q: the logs are JSON lines (zerolog, RFC 3339 timestamps) and no other format is served; send %q or leave log_format out", s.Format, FormatDefault)
	case !s.Error:
		return 0, errors.New("log_error false: errors are always logged (the config's log_level cannot turn them off either); the quietest level is log_warning false")
	case s.Info && !s.Warning:
		return 0, errors.New("log_info true with log_warning false: the log level is a threshold, and info lines log warnings too")
	case s.VerboseLevel > 0 && !s.Info:
		return 0, errors.New("log_verbose_level above 0 with log_info false: the log level is a threshold, and verbose (debug) logging logs info lines too")
	case s.VerboseLevel > 0:
		return zerolog.DebugLevel, nil
	case s.Info:
		return zerolog.InfoLevel, nil
	case s.Warning:
		return zerolog.WarnLevel, nil
	}
	return zerolog.ErrorLevel, nil
}

// Update returns the level a POST /v2/logging body asks for from level
// cur: a JSON object naming some of Keys (see the package doc), or an
// error that says what is wrong with it.
func Update(cur zerolog.Level, body []byte) (zerolog.Level, error) {
	var posted map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&posted); err != nil || posted == nil || d.More() {
		return cur, fmt.Errorf("the body is not a JSON object of logging settings (%s)", strings.Join(Keys, ", "))
	}
	s := Of(cur)
	names := make([]string, 0, len(posted))
	for k := range posted {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if err := s.set(k, posted[k]); err != nil {
			return cur, err
		}
	}
	named := func(k string) bool { _, ok := posted[k]; return ok }
	// The named settings win over the ones that follow from cur.
	if named(KeyWarning) && !s.Warning && !named(KeyInfo) {
		s.Info = false
	}
	if (named(KeyInfo) || named(KeyWarning)) && !s.Info && !named(KeyVerbose) {
		s.VerboseLevel = 0
	}
	if named(KeyVerbose) && s.VerboseLevel > 0 && !named(KeyInfo) {
		s.Info = true
	}
	if (named(KeyInfo) || named(KeyVerbose)) && s.Info && !named(KeyWarning) {
		s.Warning = true
	}
	lvl, err := s.Level()
	if err != nil {
		return cur, err
	}
	return lvl, nil
}

// set sets the setting k from its JSON value v.
func (s *Settings) set(k string, v json.RawMessage) error {
	if !slices.Contains(Keys, k) {
		return fmt.Errorf("unknown logging setting %q (the settings are %s)", k, strings.Join(Keys, ", "))
	}
	var err error
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		err = errors.New("null")
	}
	switch {
	case err != nil:
	case k == KeyFile:
		err = json.Unmarshal(v, &s.File)
	case k == KeyFormat:
		err = json.Unmarshal(v, &s.Format)
	case k == KeyInfo:
		err = json.Unmarshal(v, &s.Info)
	case k == KeyWarning:
		err = json.Unmarshal(v, &s.Warning)
	case k == KeyError:
		err = json.Unmarshal(v, &s.Error)
	case k == KeyVerbose:
		var n float64
		if err = json.Unmarshal(v, &n); err == nil && (n < 0 || n != math.Trunc(n) || n > math.MaxUint32) {
			return fmt.Errorf("%s %s: want an integer from 0 (no verbose logging) up; any above 0 is debug", k, v)
		}
		s.VerboseLevel = uint32(n)
	}
	if err != nil {
		return fmt.Errorf("%s %s: want %s", k, v, kinds[k])
	}
	return nil
}

var kinds = map[string]string{
	KeyFile: "a string", KeyFormat: "a string", KeyInfo: "true or false",
	KeyWarning: "true or false", KeyError: "true or false", KeyVerbose: "an integer",
}
