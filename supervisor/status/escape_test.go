package status

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// hostile holds what a compromised worker could write to the scoreboard
// for the operator's terminal: OSC (retitle, and answer back on some
// terminals), CSI as an ESC sequence and as the 8-bit C1 byte both raw and
// UTF-8 encoded, a bell, a newline that would fake a line, DEL and a
// bidirectional override.
const hostile = "w\x1b]0;pwned\x07\x1b[2J\x9b31m\u009b1m\nFAKE LINE\x7f\u202e"

// terminalSafe fails t when text holds anything a terminal acts on, other
// than the newlines that end its lines.
func terminalSafe(t *testing.T, text string) {
	t.Helper()
	for i, r := range text {
		if r != '\n' && (r == 0xfffd || !strconv.IsPrint(r)) {
			t.Fatalf("status text holds %q at byte %d:\n%q", r, i, text)
		}
	}
	if strings.Contains(text, "\nFAKE LINE") {
		t.Fatalf("a string's newline made a line of its own:\n%s", text)
	}
}

// TestTextReportEscapesScoreboardStrings: the strings a worker writes to
// its scoreboard slot (name, role, device, CPUs, models) are printed by
// `supervisor status` escaped, as are the GPU's name and a model's reason.
func TestTextReportEscapesScoreboardStrings(t *testing.T) {
	sb, err := shm.Create(filepath.Join(t.TempDir(), "board"), 2, 100, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	now := time.Now()
	s := sb.Slot(0)
	s.Claim(shm.Identity{Role: "infer" + hostile, Name: "infer-0" + hostile, Models: []string{"m" + hostile}, Device: "cpu" + hostile,
		CPUs: "0" + hostile, Generation: 1, Spawned: now.Add(-time.Minute)})
	s.SetPID(os.Getpid())
	s.SetState(shm.Ready)
	s.Heartbeat(now)
	r := buildReport(reportInput{
		status: control.Status{PID: 100, Version: "test", Ready: true, Generation: 1,
			Models: []control.ModelState{{Name: "m" + hostile, Reason: "could not load" + hostile}}},
		header:  sb.Header(),
		slots:   sb.Snapshot(),
		gpus:    []affinity.GPUUsage{{Index: 0, Name: "gpu" + hostile}},
		now:     now,
		boardOK: true,
	})
	var b bytes.Buffer
	r.WriteText(&b)
	terminalSafe(t, b.String())
	if want := `infer-0w\x1b]0;pwned\x07\x1b[2J\x9b31m\u009b1m\x0aFAKE LINE\x7f\u202e`; !strings.Contains(b.String(), want) {
		t.Errorf("status text lacks the worker's name escaped, %s:\n%s", want, b.String())
	}
}

// TestTextReportEscapesEveryString: every string the report holds, set
// to hostile (through reflection, so that a field added later is
// covered), is printed escaped; the text has as many lines as with plain
// strings.
func TestTextReportEscapesEveryString(t *testing.T) {
	text := func(s string) string {
		r := &Report{At: time.Now()}
		fillStrings(reflect.ValueOf(r).Elem(), s)
		var b bytes.Buffer
		r.WriteText(&b)
		return b.String()
	}
	plain, bad := text("x"), text(hostile)
	if !strings.Contains(plain, "\nx") && !strings.Contains(plain, " x") {
		t.Fatalf("the filled strings do not show in the text:\n%s", plain)
	}
	terminalSafe(t, bad)
	if p, h := strings.Count(plain, "\n"), strings.Count(bad, "\n"); p != h {
		t.Errorf("%d lines with plain strings, %d with hostile ones:\n%s", p, h, bad)
	}
}

// fillStrings sets every settable string in v to s: fields, one new
// element of each slice, one key (and value) of each map, and what each
// nil pointer would point to.
func fillStrings(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillStrings(v.Elem(), s)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillStrings(v.Field(i), s)
			}
		}
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		fillStrings(e, s)
		v.Set(reflect.Append(v, e))
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillStrings(k, s)
		fillStrings(e, s)
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		v.SetMapIndex(k, e)
	}
}
