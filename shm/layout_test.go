package shm

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// TestLayoutIsFrozen pins the documented offsets: changing any of them
// requires a new LayoutVersion.
func TestLayoutIsFrozen(t *testing.T) {
	var h headerLayout
	var s slotLayout
	offsets := []struct {
		name       string
		have, want uintptr
	}{
		{"header size", unsafe.Sizeof(h), 128},
		{"header.version", unsafe.Offsetof(h.version), 8},
		{"header.slotCount", unsafe.Offsetof(h.slotCount), 20},
		{"header.masterPID", unsafe.Offsetof(h.masterPID), 24},
		{"header.generation", unsafe.Offsetof(h.generation), 32},
		{"header.startNanos", unsafe.Offsetof(h.startNanos), 40},
		{"header.logLevel", unsafe.Offsetof(h.logLevel), 48},
		{"slot size", unsafe.Sizeof(s), 4096},
		{"slot.state", unsafe.Offsetof(s.state), 8},
		{"slot.pid", unsafe.Offsetof(s.pid), 16},
		{"slot.generation", unsafe.Offsetof(s.generation), 24},
		{"slot.recycleAfter", unsafe.Offsetof(s.recycleAfter), 32},
		{"slot.heartbeatNanos", unsafe.Offsetof(s.heartbeatNanos), 56},
		{"slot.requests", unsafe.Offsetof(s.requests), 64},
		{"slot.queueDepth", unsafe.Offsetof(s.queueDepth), 88},
		{"slot.role", unsafe.Offsetof(s.role), 128},
		{"slot.name", unsafe.Offsetof(s.name), 144},
		{"slot.models", unsafe.Offsetof(s.models), 192},
		{"slot.device", unsafe.Offsetof(s.device), 320},
		{"slot.cpus", unsafe.Offsetof(s.cpus), 384},
		{"slot.latency", unsafe.Offsetof(s.latency), 512},
		{"slot.latencySum", unsafe.Offsetof(s.latencySum), 672},
		{"slot.queueTime", unsafe.Offsetof(s.queueTime), 680},
		{"slot.queueTimeSum", unsafe.Offsetof(s.queueTimeSum), 840},
		{"slot.batchSize", unsafe.Offsetof(s.batchSize), 848},
		{"slot.batchSizeSum", unsafe.Offsetof(s.batchSizeSum), 928},
		{"slot.perModel", unsafe.Offsetof(s.perModel), 1024},
		{"model size", unsafe.Sizeof(s.perModel[0]), 128},
		{"model.failures", unsafe.Offsetof(s.perModel[0].failures), 8},
		{"model.requestNanos", unsafe.Offsetof(s.perModel[0].requestNanos), 40},
		{"model.queueCount", unsafe.Offsetof(s.perModel[0].queueCount), 48},
		{"model.inferences", unsafe.Offsetof(s.perModel[0].inferences), 64},
		{"model.computeInfer", unsafe.Offsetof(s.perModel[0].computeInfer), 88},
		{"slot.work", unsafe.Offsetof(s.work), 2048},
		{"work.entries", unsafe.Offsetof(s.work.entries), 8},
	}
	for _, o := range offsets {
		if o.have != o.want {
			t.Errorf("%s = %d, want %d", o.name, o.have, o.want)
		}
	}
	if got := binary.LittleEndian.Uint64([]byte("SCOREBRD")); got != magic {
		t.Errorf("magic = %#x, want %#x (\"SCOREBRD\")", magic, got)
	}
}

func TestCreateThenOpenReadOnlySeesHeader(t *testing.T) {
	before := time.Now()
	path := filepath.Join(t.TempDir(), "b.scoreboard")
	b, err := Create(path, 5, 1234, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.SetGeneration(4)

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	if fi.Size() != 128+5*4096 {
		t.Errorf("size = %d, want %d", fi.Size(), 128+5*4096)
	}
	if tmps, _ := filepath.Glob(path + ".tmp*"); len(tmps) != 0 {
		t.Errorf("temporary files left behind: %v", tmps)
	}

	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := r.Header()
	if h.Version != LayoutVersion || h.Slots != 5 || h.MasterPID != 1234 || h.Generation != 4 {
		t.Errorf("header = %+v, want version %d, 5 slots, master 1234, generation 4", h, LayoutVersion)
	}
	if h.MasterStart.Before(before.Truncate(time.Microsecond)) || h.MasterStart.After(time.Now()) {
		t.Errorf("master start = %v, want between %v and now", h.MasterStart, before)
	}
	snaps := r.Snapshot()
	if len(snaps) != 5 {
		t.Fatalf("%d snapshots, want 5", len(snaps))
	}
	for i, s := range snaps {
		if s.Index != i || s.State != Free || s.Stale(h) {
			t.Errorf("fresh slot %d = %+v, want free and not stale", i, s)
		}
	}
}

// TestLogLevelCrossesProcesses: the master's SetLogLevel is what another
// mapping of the board reads, debug (level 0) told apart from none set.
func TestLogLevelCrossesProcesses(t *testing.T) {
	b := newBoard(t, 1)
	r, err := Open(b.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if lvl, ok := r.LogLevel(); ok {
		t.Fatalf("fresh board: log level %d set, want none", lvl)
	}
	for _, lvl := range []int8{0, -1, 1, 3, 7} {
		b.SetLogLevel(lvl)
		if got, ok := r.LogLevel(); !ok || got != lvl {
			t.Errorf("after SetLogLevel(%d): LogLevel = %d, %v", lvl, got, ok)
		}
	}
}

func TestCreateReplacesWithoutDisturbingOldMappings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.scoreboard")
	old, err := Create(path, 2, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	old.Slot(0).Claim(Identity{Name: "old"})

	b, err := Create(path, 3, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	old.Slot(0).RequestStarted() // the old mapping is still valid
	if got := old.SlotSnapshot(0).InFlight; got != 1 {
		t.Errorf("old board in-flight = %d, want 1", got)
	}
	if err := old.Remove(); err != nil { // must not delete the new board
		t.Fatal(err)
	}
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("new board gone after the old one's Remove: %v", err)
	}
	r.Close()
	if err := b.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Remove, stat = %v, want not exist", err)
	}
}

func TestOpenRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := func(t *testing.T) string {
		path := filepath.Join(dir, t.Name()[len("TestOpenRejectsBadFiles/"):]+".scoreboard")
		b, err := Create(path, 4, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		return path
	}
	patch := func(t *testing.T, path string, off int64, v []byte) {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(v, off); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T) string
		want    error
		says    string
	}{
		{"missing", func(t *testing.T) string { return filepath.Join(dir, "nope") }, os.ErrNotExist, "is the supervisor running"},
		{"empty", func(t *testing.T) string {
			p := filepath.Join(dir, "empty")
			os.WriteFile(p, nil, 0o600)
			return p
		}, ErrTruncated, "shorter than the 128-byte header"},
		{"foreign", func(t *testing.T) string {
			p := filepath.Join(dir, "foreign")
			os.WriteFile(p, []byte(strings.Repeat("#!/bin/sh\n", 500)), 0o600)
			return p
		}, ErrNotScoreboard, "magic"},
		{"version", func(t *testing.T) string {
			p := good(t)
			patch(t, p, 8, []byte{2, 0, 0, 0})
			return p
		}, ErrVersion, "file has version 2, this binary reads version 3"},
		{"slotsize", func(t *testing.T) string {
			p := good(t)
			patch(t, p, 16, []byte{0, 4, 0, 0})
			return p
		}, ErrNotScoreboard, "slot size"},
		{"truncated", func(t *testing.T) string {
			p := good(t)
			if err := os.Truncate(p, 128+3*4096); err != nil {
				t.Fatal(err)
			}
			return p
		}, ErrTruncated, "4 slots need 16512"},
		{"oversized", func(t *testing.T) string {
			p := good(t)
			if err := os.Truncate(p, 128+5*4096); err != nil {
				t.Fatal(err)
			}
			return p
		}, ErrNotScoreboard, "need exactly"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.prepare(t)
			for _, open := range []func(string) (*Scoreboard, error){Open, OpenReadOnly} {
				b, err := open(path)
				if err == nil {
					b.Close()
					t.Fatalf("opened %q, want %v", path, c.want)
				}
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), path) {
					t.Errorf("error = %q, want %v saying %q and naming the path", err, c.want, c.says)
				}
			}
		})
	}
}

func TestCreateRejectsBadSlotCounts(t *testing.T) {
	for _, n := range []int{0, -1, MaxSlots + 1} {
		if b, err := Create(filepath.Join(t.TempDir(), "b"), n, 1, 1); err == nil {
			b.Close()
			t.Errorf("Create with %d slots succeeded, want an error", n)
		}
	}
}

func TestReadOnlySlotPanics(t *testing.T) {
	b := newBoard(t, 1)
	r, err := OpenReadOnly(b.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer func() {
		if recover() == nil {
			t.Error("Slot on a read-only board did not panic")
		}
	}()
	r.Slot(0)
}

func TestStringsAreTruncatedAtRuneBoundary(t *testing.T) {
	b := newBoard(t, 1)
	long := strings.Repeat("é", 40) // 80 bytes; name holds 48
	b.Slot(0).Claim(Identity{Role: "infer", Name: long, Models: []string{"resnet", "bert"}})
	s := b.SlotSnapshot(0)
	if s.Name != strings.Repeat("é", 24) || s.Role != "infer" {
		t.Errorf("name, role = %q, %q; want 24 runes of é, infer", s.Name, s.Role)
	}
	if len(s.Models) != 2 || s.Models[0] != "resnet" || s.Models[1] != "bert" {
		t.Errorf("models = %q, want [resnet bert]", s.Models)
	}
}

func TestStateString(t *testing.T) {
	for st, want := range map[State]string{Free: "free", Starting: "starting", Ready: "ready", Draining: "draining", Stopping: "stopping", Dead: "dead", 9: "state(9)"} {
		if st.String() != want {
			t.Errorf("State(%d).String() = %q, want %q", uint64(st), st.String(), want)
		}
	}
}

func TestDefaultPathIsStable(t *testing.T) {
	a, b := DefaultPath("/run/supervisor"), DefaultPath("/run/supervisor/")
	if a != b || !strings.HasPrefix(a, "/dev/shm/supervisor-") || !strings.HasSuffix(a, ".scoreboard") {
		t.Errorf("DefaultPath = %q and %q, want one /dev/shm/supervisor-*.scoreboard", a, b)
	}
	if DefaultPath("/run/other") == a {
		t.Error("two runtime dirs share a board path")
	}
}
