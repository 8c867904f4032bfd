package board

import (
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestBoardCountersSurviveReleasedSlots: a worker's counts stay in the
// totals after its process is reaped and its slot reused, so /metrics
// counters never go back on a recycle.
func TestBoardCountersSurviveReleasedSlots(t *testing.T) {
	b := Open(t.TempDir(), 1, 3, zerolog.Nop())
	if b == nil {
		t.Skip("no /dev/shm here")
	}
	defer b.Remove()
	spec := worker.Spec{Role: worker.RolePrep, Name: "prep-0", Generation: 3, MaxRequests: 50,
		Models: []worker.Model{{Name: "a"}, {Name: "b"}}}
	bs := b.Claim(&spec)
	i := bs.i
	if i < 0 || spec.Scoreboard != b.Path() || spec.ScoreboardSlot != i {
		t.Fatalf("claim = %d, spec board %q slot %d", i, spec.Scoreboard, spec.ScoreboardSlot)
	}
	b.Started(bs, os.Getpid())
	w, err := shm.Open(spec.Scoreboard) // as the worker does
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ws := w.Slot(spec.ScoreboardSlot)
	for range 5 {
		ws.RequestStarted()
		ws.RequestFinished(time.Millisecond, false)
		ws.Model(1).RequestFinished(time.Millisecond, shm.Success)
	}
	ws.Model(0).RequestFinished(time.Millisecond, shm.Rejected)

	count := func() (uint64, uint64, uint64) {
		_, slots, tot := b.Snapshot()
		for _, s := range slots {
			tot.Add(s)
		}
		return tot.Role("prep").Requests, tot.Model("b").Success, tot.Model("a").Failures[shm.Rejected]
	}
	if r, s, f := count(); r != 5 || s != 5 || f != 1 {
		t.Fatalf("live totals: %d requests, %d b successes, %d a rejections; want 5, 5, 1", r, s, f)
	}
	_, slots, _ := b.Snapshot()
	if got := slots[i]; got.Name != "prep-0" || got.Generation != 3 || got.RecycleAfter != 50 || got.PID != os.Getpid() || got.Stale(shm.Header{Generation: 3}) {
		t.Errorf("claimed slot = %+v", got)
	}
	b.Release(bs)
	for range 3 { // reuse every slot at least once
		other := worker.Spec{Role: worker.RolePrep, Name: "prep-1"}
		b.Release(b.Claim(&other))
	}
	if r, s, f := count(); r != 5 || s != 5 || f != 1 {
		t.Errorf("after release and reuse: %d, %d, %d; want 5, 5, 1", r, s, f)
	}
	b.Stamp(4, nil)
	if h, _, _ := b.Snapshot(); h.Generation != 4 {
		t.Errorf("header generation %d after stamp(4)", h.Generation)
	}
	path := b.Path()
	b.Remove()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("board file after remove: %v", err)
	}
	if b.Claim(&spec).i != -1 || b.Path() != "" {
		t.Error("a removed board still hands out slots")
	}
	b.Release(bs) // no-op, no fault
}

// TestBoardSurvivesTruncation truncates the board file under the master's
// mapping, as the workers' user can: the next snapshot does not kill the
// process (SIGBUS) but reports the fault and replaces the board; slots
// claimed on the damaged board are forgotten, new claims use the new one,
// and the retired totals from before the fault stay.
func TestBoardSurvivesTruncation(t *testing.T) {
	b := Open(t.TempDir(), 1, 3, zerolog.Nop())
	if b == nil {
		t.Skip("no /dev/shm here")
	}
	defer b.Remove()
	var chowned []string
	if err := b.SetOwner(func(p string) error { chowned = append(chowned, p); return nil }); err != nil {
		t.Fatal(err)
	}
	spec := worker.Spec{Role: worker.RolePrep, Name: "prep-0", Generation: 3}
	done := b.Claim(&spec)
	w, err := shm.Open(spec.Scoreboard)
	if err != nil {
		t.Fatal(err)
	}
	w.Slot(done.i).RequestStarted()
	w.Slot(done.i).RequestFinished(time.Millisecond, false)
	w.Close()
	b.Release(done) // 1 request retired before the fault
	old := b.Claim(&spec)
	b.Stamp(5, nil)

	if err := os.Truncate(b.Path(), 0); err != nil {
		t.Fatal(err)
	}
	h, slots, tot := b.Snapshot()
	if n, why := b.Fault(); n != 1 || why == "" {
		t.Fatalf("after a snapshot of a truncated board: %d faults (%q), want 1", n, why)
	}
	if len(slots) != 0 || h.Slots != 0 || tot.Role("prep").Requests != 1 {
		t.Fatalf("snapshot of the damaged board: %d slots, header %+v, %d retired requests; want none, zero, 1",
			len(slots), h, tot.Role("prep").Requests)
	}
	if len(chowned) != 2 || chowned[1] != b.Path() {
		t.Errorf("the recreated board was not given to the workers' user: %v", chowned)
	}
	b.Release(old) // a slot of the damaged board: ignored, no fault
	fresh := worker.Spec{Role: worker.RoleInfer, Name: "infer-0", Generation: 5}
	if bs := b.Claim(&fresh); bs.i < 0 || bs.sb == old.sb {
		t.Fatalf("claim after the fault: slot %d on the old board %t", bs.i, bs.sb == old.sb)
	}
	h, slots, _ = b.Snapshot()
	if h.Generation != 5 || len(slots) == 0 {
		t.Fatalf("the recreated board: header %+v, %d slots; want generation 5 and slots", h, len(slots))
	}
	if n, _ := b.Fault(); n != 1 {
		t.Fatalf("the recreated board faulted too: %d faults", n)
	}
}
