package status

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
)

// arenaStuckAfter is how long every prep worker's shared-memory arena must
// have been full before /v2/health/ready answers 503: long past a burst
// (a full arena makes a request wait up to a second, then 503), short
// enough for a load balancer to steer away from a stuck server.
const arenaStuckAfter = 3 * time.Second

// ArenaRow is a prep worker's shared-memory arena in the status report.
type ArenaRow struct {
	Slots int64 `json:"slots"`
	InUse int64 `json:"in_use"`
	// FullS is how long every slot has been in use, in seconds; 0 while
	// one is free.
	FullS float64 `json:"full_s"`
	// TurnedAway counts requests answered 503 for want of a free slot.
	TurnedAway uint64 `json:"turned_away"`
}

// arenaRow is s's arena, or nil when it has none.
func arenaRow(s shm.SlotSnapshot, now time.Time) *ArenaRow {
	if s.Arena.Slots == 0 {
		return nil
	}
	return &ArenaRow{Slots: s.Arena.Slots, InUse: s.Arena.InUse, FullS: s.Arena.FullFor(now).Seconds(), TurnedAway: s.Arena.Full}
}

// liveArenas are the arenas of the prep workers serving now (ready, not
// stale); ok is false when none has one.
func liveArenas(h shm.Header, slots []shm.SlotSnapshot) (live []shm.SlotSnapshot, ok bool) {
	for _, s := range slots {
		if s.Role == "prep" && s.State == shm.Ready && s.Arena.Slots > 0 && !s.Stale(h) {
			live = append(live, s)
		}
	}
	return live, len(live) > 0
}

// ArenasStuck says why the server should not be ready when every serving
// prep worker's arena has been full for longer than arenaStuckAfter: each
// request then waits a second and gets 503. "" otherwise.
func ArenasStuck(h shm.Header, slots []shm.SlotSnapshot, now time.Time) string {
	live, ok := liveArenas(h, slots)
	if !ok {
		return ""
	}
	var each []string
	for _, s := range live {
		d := s.Arena.FullFor(now)
		if d <= arenaStuckAfter {
			return ""
		}
		each = append(each, fmt.Sprintf("%s (pid %d): %d/%d slots in use for %s", s.Name, s.PID, s.Arena.InUse, s.Arena.Slots, d.Round(time.Second)))
	}
	return fmt.Sprintf("not ready: every prep worker's shared-memory arena has been full for more than %s (%s); requests get 503 until slots come back",
		arenaStuckAfter, strings.Join(each, "; "))
}

// arenaBottleneck names prep workers whose arena is full now, for the
// report's bottleneck line; "" when none is.
func arenaBottleneck(rows []ProcessRow) string {
	var full []string
	for _, p := range rows {
		if a := p.Arena; a != nil && a.full() {
			full = append(full, fmt.Sprintf("%s %d/%d for %s", p.Name, a.InUse, a.Slots, seconds(a.FullS)))
		}
	}
	if len(full) == 0 {
		return ""
	}
	return "prep shared-memory arena full (" + strings.Join(full, ", ") + "): requests wait for a slot, then get 503"
}

// writeArenas lists each prep worker's arena, for `supervisor status`.
func (r *Report) writeArenas(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := false
	for _, p := range r.Processes {
		a := p.Arena
		if a == nil {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "\nARENA\tPID\tSLOTS IN USE\tFULL FOR\tTURNED AWAY")
			header = true
		}
		printf(tw, "%s\t%d\t%d/%d\t%s\t%d\n", p.Name, p.PID, a.InUse, a.Slots, a.fullFor(), a.TurnedAway)
	}
	tw.Flush()
}

// fullFor is how long the arena has been full, "-" while a slot is free.
func (a *ArenaRow) fullFor() string {
	if a.FullS <= 0 {
		return "-"
	}
	return seconds(a.FullS)
}

// full says whether every slot is in use now.
func (a *ArenaRow) full() bool { return a.InUse >= a.Slots }

// writeArenaMetrics: each live prep worker's arena, by worker and pid (a
// new process starts its counter afresh under its own pid).
func writeArenaMetrics(p *promText, s Scrape) {
	var live []shm.SlotSnapshot
	for _, sl := range s.Slots {
		if sl.Role == "prep" && sl.State != shm.Free && sl.State != shm.Dead && sl.Arena.Slots > 0 {
			live = append(live, sl)
		}
	}
	now := time.Now()
	for _, f := range []struct {
		name, typ, help string
		v               func(shm.ArenaSnapshot) float64
	}{
		{"supervisor_arena_slots", "gauge", "Slots in a prep worker's shared-memory arena",
			func(a shm.ArenaSnapshot) float64 { return float64(a.Slots) }},
		{"supervisor_arena_slots_in_use", "gauge", "Slots of a prep worker's arena held by requests (or by infer workers still using them)",
			func(a shm.ArenaSnapshot) float64 { return float64(a.InUse) }},
		{"supervisor_arena_full_seconds", "gauge", "How long every slot of a prep worker's arena has been in use; 0 while one is free",
			func(a shm.ArenaSnapshot) float64 { return a.FullFor(now).Seconds() }},
		{"supervisor_arena_full_total", "counter", "Requests a prep worker answered 503 because no arena slot became free in time",
			func(a shm.ArenaSnapshot) float64 { return float64(a.Full) }},
	} {
		p.family(f.name, f.typ, f.help)
		for _, sl := range live {
			p.sample(f.name, f.v(sl.Arena), "worker", sl.Name, "pid", fmt.Sprint(sl.PID))
		}
	}
}
