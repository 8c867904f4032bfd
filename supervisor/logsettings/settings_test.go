package logsettings

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestOfRoundTrips: every config level reads back as itself through
// Triton's settings, and GET's JSON is Triton's keys.
func TestOfRoundTrips(t *testing.T) {
	for _, lvl := range []zerolog.Level{zerolog.DebugLevel, zerolog.InfoLevel, zerolog.WarnLevel, zerolog.ErrorLevel} {
		got, err := Of(lvl).Level()
		if err != nil || got != lvl {
			t.Errorf("Of(%v).Level() = %v, %v", lvl, got, err)
		}
	}
	b, _ := json.Marshal(Of(zerolog.InfoLevel))
	want := `{"log_file":"","log_info":true,"log_warning":true,"log_error":true,"log_verbose_level":0,"log_format":"default"}`
	if string(b) != want {
		t.Errorf("info settings = %s, want %s", b, want)
	}
}

func TestUpdate(t *testing.T) {
	for _, c := range []struct {
		from zerolog.Level
		body string
		want zerolog.Level
	}{
		{zerolog.InfoLevel, `{"log_verbose_level":1}`, zerolog.DebugLevel},
		{zerolog.InfoLevel, `{"log_verbose_level":7}`, zerolog.DebugLevel},
		{zerolog.ErrorLevel, `{"log_verbose_level":1}`, zerolog.DebugLevel},
		{zerolog.DebugLevel, `{"log_verbose_level":0}`, zerolog.InfoLevel},
		{zerolog.DebugLevel, `{"log_info":false}`, zerolog.WarnLevel},
		{zerolog.DebugLevel, `{"log_warning":false}`, zerolog.ErrorLevel},
		{zerolog.ErrorLevel, `{"log_info":true}`, zerolog.InfoLevel},
		{zerolog.ErrorLevel, `{"log_warning":true}`, zerolog.WarnLevel},
		{zerolog.WarnLevel, `{}`, zerolog.WarnLevel},
		{zerolog.InfoLevel, `{"log_file":"","log_format":"default","log_error":true}`, zerolog.InfoLevel},
		// Every key, as tritonclient's update_log_settings may send them.
		{zerolog.InfoLevel, `{"log_file":"","log_info":true,"log_warning":true,"log_error":true,"log_verbose_level":1,"log_format":"default"}`, zerolog.DebugLevel},
	} {
		got, err := Update(c.from, []byte(c.body))
		if err != nil || got != c.want {
			t.Errorf("Update(%v, %s) = %v, %v; want %v", c.from, c.body, got, err, c.want)
		}
	}
}

// TestUpdateRefuses: each bad body is refused with a reason naming what
// is wrong, and the level is unchanged.
func TestUpdateRefuses(t *testing.T) {
	for body, want := range map[string]string{
		``:                                      "not a JSON object",
		`[]`:                                    "not a JSON object",
		`null`:                                  "not a JSON object",
		`{} {}`:                                 "not a JSON object",
		`{"log_level":"debug"}`:                 `unknown logging setting "log_level"`,
		`{"log_file":"/tmp/x.log"}`:             "stderr",
		`{"log_format":"ISO8601"}`:              "JSON lines",
		`{"log_error":false}`:                   "errors are always logged",
		`{"log_info":true,"log_warning":false}`: "threshold",
		`{"log_verbose_level":1,"log_info":false}`: "threshold",
		`{"log_verbose_level":-1}`:                 "integer from 0",
		`{"log_verbose_level":1.5}`:                "integer from 0",
		`{"log_verbose_level":"1"}`:                "want an integer",
		`{"log_info":"yes"}`:                       "want true or false",
		`{"log_info":null}`:                        "want true or false",
		`{"log_file":3}`:                           "want a string",
	} {
		got, err := Update(zerolog.WarnLevel, []byte(body))
		if err == nil || !strings.Contains(err.Error(), want) || got != zerolog.WarnLevel {
			t.Errorf("Update(%s) = %v, %v; want warn and an error with %q", body, got, err, want)
		}
	}
}
