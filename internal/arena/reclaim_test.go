package arena

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestMain lets the test binary play an infer worker: with
// ARENA_TEST_CLAIM=<ref> <ticket> it opens the arena, claims the slot,
// says "claimed" on stdout and waits to be killed.
func TestMain(m *testing.M) {
	if arg := os.Getenv("ARENA_TEST_CLAIM"); arg != "" {
		os.Exit(claimAndHang(arg))
	}
	os.Exit(m.Run())
}

func claimAndHang(arg string) int {
	var refStr, tkStr string
	if _, err := fmt.Sscan(arg, &refStr, &tkStr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ref, err1 := ParseRef(refStr)
	tk, err2 := ParseTicket(tkStr)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	a, err := Open(ref)
	if err == nil {
		err = a.Claim(tk)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("claimed")
	os.Stdin.Read(make([]byte, 1)) // until killed, or the parent closes stdin
	return 0
}

// claimer starts a child process that claims tk in owner's arena, and
// returns it once it has.
func claimer(t *testing.T, owner *Arena, tk Ticket) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ARENA_TEST_CLAIM="+owner.Ref().String()+" "+tk.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s != "claimed\n" {
			t.Fatalf("the claiming child said %q", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the claiming child did not claim within 30s")
	}
	return cmd
}

// waitFree waits until owner has no slot in use, bounded.
func waitFree(t *testing.T, owner *Arena, within time.Duration, what string) {
	t.Helper()
	polltest.Until(t, within, 5*time.Millisecond, what+": every slot free", func() bool { return owner.Stats().InUse == 0 })
}

// TestSlotOfKilledClaimerIsReclaimed: a real process claims a slot and is
// killed with SIGKILL, before or after the prep side settles; the slot
// comes back at once (its reader is gone), well before the backstop.
func TestSlotOfKilledClaimerIsReclaimed(t *testing.T) {
	owner, _ := testArena(t, 1, 64)
	for _, settleFirst := range []bool{true, false} {
		tk, err := owner.Acquire(soon())
		if err != nil {
			t.Fatal(err)
		}
		child := claimer(t, owner, tk)
		if w := owner.load(tk.Slot); w.state() != Claimed || w.pid() != child.Process.Pid {
			t.Fatalf("slot word %v pid %d, want claimed by %d", w.state(), w.pid(), child.Process.Pid)
		}
		if settleFirst {
			owner.Settle(tk, time.Hour)
			if _, err := owner.Acquire(time.Now().Add(200 * time.Millisecond)); !errors.Is(err, ErrFull) {
				t.Fatalf("a slot claimed by a live process was reused: %v", err)
			}
		}
		start := time.Now()
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if !settleFirst {
			child.Wait() // reaped: the pid is gone, not a zombie
			owner.Settle(tk, time.Hour)
		}
		waitFree(t, owner, 10*time.Second, fmt.Sprintf("settle first %v", settleFirst))
		t.Logf("settle first %v: slot back %s after the kill", settleFirst, time.Since(start))
	}
	if s := owner.Stats(); s.Reclaimed != 2 || s.Backstopped != 0 {
		t.Fatalf("stats %+v, want 2 reclaimed by death and no backstop", s)
	}
}

// TestZombieClaimerCountsAsDead: a claimer that exited but was not yet
// reaped (its parent, the master, is slow) holds nothing.
func TestZombieClaimerCountsAsDead(t *testing.T) {
	owner, _ := testArena(t, 1, 64)
	tk, _ := owner.Acquire(soon())
	child := claimer(t, owner, tk)
	child.Process.Kill() // not waited for: a zombie until Cleanup
	owner.Settle(tk, time.Hour)
	waitFree(t, owner, 10*time.Second, "zombie claimer")
}
