package status

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
)

func prepSlot(name string, inUse int64, fullSince time.Time) shm.SlotSnapshot {
	return shm.SlotSnapshot{Name: name, Role: "prep", State: shm.Ready, PID: os.Getpid(), Generation: 1,
		Arena: shm.ArenaSnapshot{Slots: 4, InUse: inUse, FullSince: fullSince, Full: 7}}
}

// TestArenasStuck: readiness fails only when every serving prep worker's
// arena has been full for longer than arenaStuckAfter.
func TestArenasStuck(t *testing.T) {
	now := time.Unix(1700000000, 0)
	h := shm.Header{Generation: 1}
	long, short := now.Add(-2*arenaStuckAfter), now.Add(-arenaStuckAfter/2)
	infer := shm.SlotSnapshot{Name: "infer-0", Role: "infer", State: shm.Ready, PID: os.Getpid(), Generation: 1}
	for _, c := range []struct {
		name  string
		slots []shm.SlotSnapshot
		stuck bool
	}{
		{"no prep worker has an arena", []shm.SlotSnapshot{infer}, false},
		{"one full for long, alone", []shm.SlotSnapshot{prepSlot("prep-0", 4, long), infer}, true},
		{"both full for long", []shm.SlotSnapshot{prepSlot("prep-0", 4, long), prepSlot("prep-1", 4, long)}, true},
		{"one has free slots", []shm.SlotSnapshot{prepSlot("prep-0", 4, long), prepSlot("prep-1", 3, time.Time{})}, false},
		{"full, but only briefly", []shm.SlotSnapshot{prepSlot("prep-0", 4, short)}, false},
	} {
		msg := ArenasStuck(h, c.slots, now)
		if (msg != "") != c.stuck {
			t.Errorf("%s: ArenasStuck = %q, want stuck %v", c.name, msg, c.stuck)
		}
		if c.stuck && !strings.Contains(msg, "prep-0 (pid") {
			t.Errorf("%s: the reason %q does not name the prep worker", c.name, msg)
		}
	}
}

// TestArenaInReportAndMetrics: a full arena shows in the status text, the
// bottleneck and /metrics.
func TestArenaInReportAndMetrics(t *testing.T) {
	now := time.Unix(1700000000, 0)
	slot := prepSlot("prep-0", 4, now.Add(-5*time.Second))
	r := buildReport(reportInput{header: shm.Header{Generation: 1}, slots: []shm.SlotSnapshot{slot}, now: now, boardOK: true})
	if len(r.Processes) != 1 || r.Processes[0].Arena == nil || r.Processes[0].Arena.InUse != 4 || r.Processes[0].Arena.FullS != 5 {
		t.Fatalf("report rows %+v: want prep-0 with an arena 4/4 full for 5s", r.Processes)
	}
	if !strings.Contains(r.Bottleneck, "arena full") {
		t.Errorf("bottleneck %q does not name the full arena", r.Bottleneck)
	}
	var text bytes.Buffer
	r.WriteText(&text)
	if !strings.Contains(text.String(), "ARENA") || !strings.Contains(text.String(), "4/4") {
		t.Errorf("status text has no arena line:\n%s", text.String())
	}
	metrics := string(MetricsText(Scrape{Slots: []shm.SlotSnapshot{slot}, Totals: NewTotals()}))
	for _, want := range []string{`supervisor_arena_slots_in_use{worker="prep-0",pid=`, `supervisor_arena_full_total{worker="prep-0"`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}
