package shm

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
	"time"
)

// The test binary re-executes itself as a "worker" process that opens a
// board; helperEnv names the behaviour, boardEnv the board.
const (
	helperEnv = "SHM_TEST_HELPER"
	boardEnv  = "SHM_TEST_BOARD"
)

// What the "record" helper writes into slot 2.
const (
	helperSlot      = 2
	helperRequests  = 25
	helperQueue     = 4
	helperHeartbeat = 1_700_000_123_000_000_000 // Unix ns
)

func TestMain(m *testing.M) {
	if b := os.Getenv(helperEnv); b != "" {
		os.Exit(helper(b, os.Getenv(boardEnv)))
	}
	os.Exit(m.Run())
}

// helper is a fake worker. "record" records requests, a heartbeat and
// state ready in its slot, then writes one byte to stdout and closes the
// board. "vanish" marks itself ready, writes the byte and exits without
// touching the slot again, as a crashed worker would.
func helper(behaviour, path string) int {
	b, err := Open(path)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 2
	}
	s := b.Slot(helperSlot)
	s.SetPID(os.Getpid())
	switch behaviour {
	case "record":
		for i := 0; i < helperRequests; i++ {
			s.RequestStarted()
			s.RequestFinished(time.Duration(i+1)*time.Millisecond, i%5 == 0)
		}
		s.SetQueueDepth(helperQueue)
		s.Heartbeat(time.Unix(0, helperHeartbeat))
		s.SetState(Ready)
		os.Stdout.Write([]byte{'r'})
		b.Close()
	case "vanish":
		s.SetState(Ready)
		s.RequestStarted() // never finished
		os.Stdout.Write([]byte{'r'})
	default:
		return 3
	}
	return 0
}

// runHelper starts the test binary as a helper on board, waits (bounded)
// for its ready byte and for it to exit, and reaps it.
func runHelper(t *testing.T, behaviour string, board *Scoreboard) int {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"="+behaviour, boardEnv+"="+board.Path(),
		// under -race, skip the race runtime's 1s pause at exit
		"GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(out).ReadByte()
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("helper %q sent no ready byte: %v", behaviour, err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper %q: no ready byte within 30s", behaviour)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("helper %q: %v", behaviour, err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("helper %q did not exit within 30s", behaviour)
	}
	return cmd.Process.Pid
}

func TestWorkerProcessWritesItsSlot(t *testing.T) {
	b := newBoard(t, 4)
	b.Slot(helperSlot).Claim(Identity{Role: "infer", Name: "infer-0", Generation: 7})
	pid := runHelper(t, "record", b)

	r, err := OpenReadOnly(b.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := r.SlotSnapshot(helperSlot)
	if got.PID != pid || got.State != Ready || got.Name != "infer-0" || got.Requests != helperRequests ||
		got.Errors != helperRequests/5 || got.InFlight != 0 || got.QueueDepth != helperQueue ||
		got.Heartbeat.UnixNano() != helperHeartbeat || got.Latency.Count() != helperRequests {
		t.Fatalf("slot %d = %+v; want pid %d, ready, %d requests, %d errors, queue %d, heartbeat %d",
			helperSlot, got, pid, helperRequests, helperRequests/5, helperQueue, int64(helperHeartbeat))
	}
	// 1..25ms: le=1ms:1, le=2.5ms:1, le=5ms:3, le=10ms:5, le=25ms:15
	want := map[int]uint64{4: 1, 5: 1, 6: 3, 7: 5, 8: 15}
	for i, c := range got.Latency.Counts {
		if c != want[i] {
			t.Errorf("latency bucket %d = %d, want %d (all: %v)", i, c, want[i], got.Latency.Counts)
		}
	}
	for i, s := range r.Snapshot() {
		if i != helperSlot && s.State != Free {
			t.Errorf("slot %d touched by the worker: %+v", i, s)
		}
	}
}

func TestVanishedWorkerIsStale(t *testing.T) {
	b := newBoard(t, 4)
	b.Slot(helperSlot).Claim(Identity{Role: "prep", Name: "prep-1", Generation: 7})
	pid := runHelper(t, "vanish", b) // reaped: its pid no longer exists

	got := b.SlotSnapshot(helperSlot)
	if got.PID != pid || got.State != Ready || got.InFlight != 1 {
		t.Fatalf("slot = %+v, want pid %d, ready, 1 in flight", got, pid)
	}
	if !got.Stale(b.Header()) {
		t.Errorf("slot of exited pid %d is not stale", pid)
	}
	b.Slot(helperSlot + 1).Claim(Identity{Name: "alive", Generation: 7})
	b.Slot(helperSlot + 1).SetPID(os.Getpid())
	if s := b.SlotSnapshot(helperSlot + 1); s.Stale(b.Header()) {
		t.Errorf("slot of a live pid is stale: %+v", s)
	}
}
