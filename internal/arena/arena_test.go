package arena

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func testArena(t *testing.T, slots, slotBytes int) (owner, peer *Arena) {
	t.Helper()
	if _, err := os.Stat(Dir); err != nil {
		t.Skipf("no %s: %v", Dir, err)
	}
	path := PathFor(filepath.Join(t.TempDir(), t.Name()+".sock"))
	owner, err := Create(path, slots, slotBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close() })
	if peer, err = Open(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	return owner, peer
}

func TestFramesCrossTheMapping(t *testing.T) {
	owner, peer := testArena(t, 2, 64)
	i, err := owner.Acquire(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	frame := append(owner.Buf(i), "request frame"...)
	if !owner.Fits(i, frame) {
		t.Fatal("a small frame does not fit its slot")
	}
	got, err := peer.Frame(i, len(frame))
	if err != nil || string(got) != "request frame" {
		t.Fatalf("peer read %q, %v", got, err)
	}
	reply := append(peer.Buf(i), "reply"...)
	peer.Finish(i)
	if back, _ := owner.Frame(i, len(reply)); string(back) != "reply" {
		t.Fatalf("owner read back %q", back)
	}
	if big := append(owner.Buf(i), make([]byte, 65)...); owner.Fits(i, big) {
		t.Fatal("a frame larger than the slot was taken as fitting")
	}
	if _, err := peer.Frame(i, 1<<20); err == nil {
		t.Fatal("a frame length beyond the slot was accepted")
	}
	if _, err := peer.Frame(5, 1); err == nil {
		t.Fatal("a slot number beyond the arena was accepted")
	}
	owner.Release(i)
}

func TestFullArenaAppliesBackpressure(t *testing.T) {
	owner, _ := testArena(t, 2, 8)
	a, _ := owner.Acquire(time.Second)
	if _, err := owner.Acquire(time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := owner.Acquire(50 * time.Millisecond); !errors.Is(err, ErrFull) {
		t.Fatalf("third acquire of two slots: %v, want ErrFull", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("gave up after %s, want the full 50ms wait", waited)
	}
	got := make(chan int, 1)
	go func() {
		i, err := owner.Acquire(5 * time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- i
	}()
	owner.Release(a)
	if i := <-got; i != a {
		t.Fatalf("the waiter got slot %d, want the released %d", i, a)
	}
}

// TestAbandonedSlotWaitsForItsInferWorker: a slot the prep side gave up on
// is not reused while the infer side may still write it; it comes back
// when the infer side finishes, or after the grace period.
func TestAbandonedSlotWaitsForItsInferWorker(t *testing.T) {
	owner, peer := testArena(t, 1, 8)
	i, _ := owner.Acquire(time.Second)
	owner.Abandon(i, time.Minute)
	if _, err := owner.Acquire(100 * time.Millisecond); !errors.Is(err, ErrFull) {
		t.Fatalf("an abandoned slot was reused before its infer worker finished: %v", err)
	}
	peer.Finish(i)
	if _, err := owner.Acquire(5 * time.Second); err != nil {
		t.Fatalf("the slot did not come back after Finish: %v", err)
	}
	owner.Abandon(i, 100*time.Millisecond) // its infer worker died: never finishes
	if _, err := owner.Acquire(5 * time.Second); err != nil {
		t.Fatalf("the slot did not come back after the grace period: %v", err)
	}
}

func TestOpenRefusesWhatIsNotAnArena(t *testing.T) {
	for _, p := range []string{"/etc/passwd", Dir + "/other.arena", Dir + "/" + Prefix + "x"} {
		if _, err := Open(p); err == nil {
			t.Errorf("Open(%q) succeeded", p)
		}
	}
	path := filepath.Join(Dir, Prefix+"bad-header-test"+Suffix)
	if err := os.WriteFile(path, make([]byte, 128), 0o600); err != nil {
		t.Skip(err)
	}
	defer os.Remove(path)
	if _, err := Open(path); err == nil {
		t.Error("an arena without its header was opened")
	}
}
