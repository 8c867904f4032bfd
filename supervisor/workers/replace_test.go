package workers

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/affinity/nvmltest"
	"github.com/supervisor-dev/supervisor/internal/logtest"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// fakeRoom is a GPURoom with a fixed answer that records what it was asked.
type fakeRoom struct {
	ok  bool
	why string

	mu    sync.Mutex
	asked []string // "device pid"
}

func (r *fakeRoom) Fits(device string, pid int) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, device+" "+strconv.Itoa(pid))
	return r.ok, r.why
}

func (r *fakeRoom) questions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

// gpuPosition is testPosition for an infer worker on GPU gpu ("" for a
// CPU worker) that asks room before a replacement and recycles after two
// requests. Its Retire hook records how many processes the position had
// spawned when it was called: 1 when the old worker was retired before
// its replacement was spawned (drain-first), 2 after (surge-first).
func gpuPosition(t *testing.T, gpu string, room GPURoom) (s *Position, changed chan struct{}, spawnedAtRetire chan int, log *logtest.Buffer) {
	t.Helper()
	lc := testLifecycle()
	lc.recycle = config.Recycle{MaxRequests: 2}
	s, changed, retired := testPosition(t, "ready", lc)
	s.tmpl.Name, s.name, s.tmpl.GPU = "infer-0", "infer-0", gpu
	s.hooks.Room = room
	spawnedAtRetire = make(chan int, 8)
	s.hooks.Retire = func(pos *Position, p *Process, _ time.Duration) {
		pos.mu.Lock()
		spawned, serving := pos.seq, pos.current
		pos.mu.Unlock()
		if serving == p {
			t.Errorf("retiring pid %d while it still serves", p.PID())
		}
		spawnedAtRetire <- spawned
		p.Stop(time.Second)
		retired <- p
	}
	log = &logtest.Buffer{}
	s.log = zerolog.New(log)
	return s, changed, spawnedAtRetire, log
}

// recycle sends the serving worker its max_requests and waits until
// another one serves; it returns the one that was replaced.
func recycle(t *testing.T, s *Position, changed chan struct{}) *Process {
	t.Helper()
	old := s.Serving()
	for i := range old.spec.MaxRequests {
		if err := getOK(old.spec.Socket); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	waitPosition(t, s, changed, "a replacement serving", func() bool {
		p := s.Serving()
		return p != nil && p != old && s.Status().State == stateReady
	})
	return old
}

func nextInt(t *testing.T, c chan int) int {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("the replaced worker was not retired")
		return 0
	}
}

// TestPositionReplaceMode: a GPU worker whose GPU has no room for its
// replacement is drained and stopped before the replacement is spawned,
// and status and the log say why; with room, or on the CPU, the
// replacement boots first (surge). Without the Room check every case
// surged: the drain-first one fails on spawnedAtRetire and the mode.
func TestPositionReplaceMode(t *testing.T) {
	const why = "free 9.5 GiB, worker uses 30.0 GiB"
	for _, c := range []struct {
		name, gpu    string
		room         *fakeRoom
		mode         string
		spawned      int // processes spawned when the old one was retired
		asked        bool
		warnDrainLog bool
	}{
		{"no room", "GPU-fake-0", &fakeRoom{ok: false, why: why}, control.ReplaceDrainFirst, 1, true, true},
		{"room", "GPU-fake-0", &fakeRoom{ok: true}, control.ReplaceSurge, 2, true, false},
		{"cpu", "", &fakeRoom{ok: false, why: why}, control.ReplaceSurge, 2, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, changed, spawnedAtRetire, log := gpuPosition(t, c.gpu, c.room)
			bootPosition(t, s)
			old := recycle(t, s, changed)
			if n := nextInt(t, spawnedAtRetire); n != c.spawned {
				t.Errorf("the old worker was retired with %d processes spawned, want %d (%s)", n, c.spawned, c.mode)
			}
			if q := c.room.questions(); c.asked != (len(q) == 1) || c.asked && q[0] != c.gpu+" "+strconv.Itoa(old.PID()) {
				t.Errorf("Room was asked %q; want it asked once about %s and pid %d: %v", q, c.gpu, old.PID(), c.asked)
			}
			st := s.Status()
			r := st.LastReplacement
			if r == nil || r.Mode != c.mode || !strings.Contains(r.Reason, "max_requests") || st.Recycles != 1 {
				t.Fatalf("status = %+v, last replacement %+v; want mode %s for max_requests, 1 recycle", st, r, c.mode)
			}
			if c.mode == control.ReplaceDrainFirst && r.Why != why {
				t.Errorf("last replacement's why = %q, want %q", r.Why, why)
			}
			want := "replacement would not fit GPU memory (" + why + "): replacing drain-first"
			if got := strings.Contains(log.String(), want); got != c.warnDrainLog ||
				c.warnDrainLog && !strings.Contains(log.String(), `"level":"warn","worker":"infer-0"`) {
				t.Errorf("log has the drain-first warning: %v, want %v:\n%s", got, c.warnDrainLog, log.String())
			}
			select {
			case <-old.exited:
				if old.err != nil {
					t.Errorf("the replaced worker exited with %v, want a clean drain", old.err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("the replaced worker pid %d was not stopped", old.PID())
			}
			if err := getOK(s.Serving().spec.Socket); err != nil {
				t.Errorf("the replacement does not serve: %v", err)
			}
		})
	}
}

// TestPositionDrainFirstBootFailureRestarts: when the replacement of a
// worker replaced drain-first fails to boot, the position has no worker
// (the old one is gone), says so, and boots one again with backoff.
func TestPositionDrainFirstBootFailureRestarts(t *testing.T) {
	s, changed, spawnedAtRetire, log := gpuPosition(t, "GPU-fake-0", &fakeRoom{why: "free 1.0 GiB, worker uses 2.0 GiB"})
	bootPosition(t, s)
	first := s.Serving()
	t.Setenv(helperEnv, "fail-boot")
	for i := range first.spec.MaxRequests {
		if err := getOK(first.spec.Socket); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	nextInt(t, spawnedAtRetire)
	waitPosition(t, s, changed, "the failed replacement logged", func() bool {
		return strings.Contains(log.String(), "replacement failed after the old worker was stopped (drain-first); restarting")
	})
	if p := s.Serving(); p != nil {
		t.Fatalf("pid %d serves after the old worker was stopped and its replacement failed", p.PID())
	}
	t.Setenv(helperEnv, "ready")
	waitPosition(t, s, changed, "a worker booted again", func() bool { return s.Serving() != nil })
	if err := getOK(s.Serving().spec.Socket); err != nil {
		t.Fatalf("the rebooted worker does not serve: %v", err)
	}
}

// TestPositionReloadDrainFirst: a reload that replaces a GPU worker
// with no room beside it replaces it drain-first; when the new worker
// fails, the reload says the old one was stopped first, and the position
// boots the old config again.
func TestPositionReloadDrainFirst(t *testing.T) {
	s, changed, spawnedAtRetire, _ := gpuPosition(t, "GPU-fake-0", &fakeRoom{why: "free 1.0 GiB, worker uses 2.0 GiB"})
	bootPosition(t, s)
	first := s.Serving()
	tmpl := first.spec
	if err := s.Reconfigure(Reconfig{Tmpl: tmpl, LC: s.lc, Replace: true}); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if n := nextInt(t, spawnedAtRetire); n != 1 {
		t.Errorf("the old worker was retired with %d processes spawned, want 1 (drain-first)", n)
	}
	if r := s.Status().LastReplacement; r == nil || r.Mode != control.ReplaceDrainFirst || r.Reason != "reload" {
		t.Errorf("last replacement = %+v, want drain-first for the reload", r)
	}
	second := s.Serving()
	if second == nil || second == first {
		t.Fatalf("after the reload pid %v serves, want a new worker", second)
	}

	t.Setenv(helperEnv, "fail-boot")
	err := s.Reconfigure(Reconfig{Tmpl: tmpl, LC: s.lc, Replace: true})
	if err == nil || !strings.Contains(err.Error(), "the old one was stopped first (drain-first: no GPU memory for both), so the old config boots again") {
		t.Fatalf("failed drain-first reload: %v; want it to say the old worker was stopped first", err)
	}
	t.Setenv(helperEnv, "ready")
	waitPosition(t, s, changed, "the old config booted again", func() bool {
		p := s.Serving()
		return p != nil && p != second
	})
}

// TestPositionDrainFirstFakeNVML: the master's Room, affinity.GPURoom,
// through the fake NVML: a worker that uses more of its GPU than is free
// is recycled drain-first, one that fits is recycled surge-first.
func TestPositionDrainFirstFakeNVML(t *testing.T) {
	state := filepath.Join(t.TempDir(), "nvml-state")
	t.Setenv(nvmltest.StateEnv, state)
	room := affinity.GPURoom{NVML: affinity.NVML{LibraryPath: filepath.Join(nvmltest.Library(t, 1), nvmltest.LibraryName)}}
	s, changed, spawnedAtRetire, log := gpuPosition(t, nvmltest.UUID(0), room)
	bootPosition(t, s)
	const gib = 1 << 30
	nvmltest.WriteState(t, state, nvmltest.Free(0, 6*gib), nvmltest.Process(0, s.Serving().PID(), 10*gib))
	recycle(t, s, changed)
	if n := nextInt(t, spawnedAtRetire); n != 1 {
		t.Errorf("the old worker was retired with %d processes spawned, want 1 (drain-first)", n)
	}
	if want := "replacement would not fit GPU memory (free 6.0 GiB, worker uses 10.0 GiB): replacing drain-first"; !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, log.String())
	}
	nvmltest.WriteState(t, state, nvmltest.Free(0, 6*gib), nvmltest.Process(0, s.Serving().PID(), 4*gib))
	recycle(t, s, changed)
	if n := nextInt(t, spawnedAtRetire); n != 3 {
		t.Errorf("the second replaced worker was retired with %d processes spawned, want 3 (surge-first)", n)
	}
	if r := s.Status().LastReplacement; r == nil || r.Mode != control.ReplaceSurge || r.Why != "" {
		t.Errorf("last replacement = %+v, want surge on the figures", r)
	}
}

// stopDuringDrainFirst boots a GPU worker ("slow" helper) that the fake
// NVML says has no room for a second beside it, sends it a /slow request
// (in flight, held until slowEnv's release), then its max_requests: it
// returns once the position retires the worker drain-first, the request
// still in flight (its outcome on inFlight). drain_timeout is 30s,
// shutdown_timeout 1s.
func stopDuringDrainFirst(t *testing.T) (s *Position, old *Process, inFlight chan error, log *logtest.Buffer) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "nvml-state")
	t.Setenv(nvmltest.StateEnv, state)
	t.Setenv(slowEnv, t.TempDir())
	room := affinity.GPURoom{NVML: affinity.NVML{LibraryPath: filepath.Join(nvmltest.Library(t, 1), nvmltest.LibraryName)}}
	s, _, _, log = gpuPosition(t, nvmltest.UUID(0), room)
	t.Setenv(helperEnv, "slow")
	s.tmpl.DrainTimeout = 30 * time.Second // the worker waits for /slow
	s.lc.recycleDrain = 30 * time.Second
	retiring := make(chan *Process, 1)
	s.hooks.Retire = func(_ *Position, p *Process, drain time.Duration) {
		retiring <- p
		p.Stop(drain)
	}
	bootPosition(t, s)
	old = s.Serving()
	const gib = 1 << 30
	nvmltest.WriteState(t, state, nvmltest.Free(0, 6*gib), nvmltest.Process(0, old.PID(), 10*gib))

	inFlight = make(chan error, 1)
	go func() { inFlight <- getPathOK(old.spec.Socket, "/slow") }()
	polltest.Until(t, 30*time.Second, 5*time.Millisecond, "the slow request in flight", func() bool {
		_, err := os.Stat(filepath.Join(os.Getenv(slowEnv), "entered"))
		return err == nil
	})
	for i := range old.spec.MaxRequests { // the slow one counts once done
		if err := getOK(old.spec.Socket); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	select {
	case p := <-retiring:
		if p != old {
			t.Fatalf("retired pid %d, want the old worker %d", p.PID(), old.PID())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker was not replaced after its max_requests")
	}
	return s, old, inFlight, log
}

// TestPositionStopDuringDrainFirst: a stop that arrives while a GPU
// worker is replaced drain-first (the fake NVML says there is no room for
// two) waits for the old worker's drain, which finishes the request it
// had admitted, and then stops: no replacement is booted for a position
// that is stopping (on a GPU that boot loads the model before it can
// see the stop), and no "replacement failed ... restarting" error is
// logged for a clean stop.
func TestPositionStopDuringDrainFirst(t *testing.T) {
	s, _, inFlight, log := stopDuringDrainFirst(t)
	start := time.Now()
	stopped := make(chan struct{})
	go func() { s.StopAndWait(); close(stopped) }()
	polltest.Until(t, 10*time.Second, time.Millisecond, "the stop requested", s.stopping)
	if err := os.WriteFile(filepath.Join(os.Getenv(slowEnv), "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-inFlight:
		if err != nil {
			t.Errorf("the request in flight when the drain-first swap began: %v, want 200 (drained, not lost)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request in flight did not finish")
	}
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the position did not stop within 30s of the stop")
	}
	t.Logf("stopped %v after the stop request", time.Since(start).Round(time.Millisecond))
	s.mu.Lock()
	spawned := s.seq
	s.mu.Unlock()
	if spawned != 1 {
		t.Errorf("%d workers spawned, want 1: a replacement was booted for a stopping position", spawned)
	}
	if strings.Contains(log.String(), "replacement failed") {
		t.Errorf("a clean stop logged a failed replacement:\n%s", log.String())
	}
	if st := s.Status().State; st != stateStopped {
		t.Errorf("state %q after the stop, want %q", st, stateStopped)
	}
}

// TestPositionStopDuringDrainFirstKeepsItsBound: a stop during a
// drain-first replacement whose old worker does not finish its request
// waits shutdown_timeout (stopDrain) from the stop, as a serving worker's
// stop does, not the rest of drain_timeout (recycleDrain), which the
// stop bound does not count; the old worker is then killed.
func TestPositionStopDuringDrainFirstKeepsItsBound(t *testing.T) {
	s, old, inFlight, _ := stopDuringDrainFirst(t)
	start := time.Now()
	stopped := make(chan struct{})
	go func() { s.StopAndWait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(s.lc.recycleDrain / 2):
		t.Fatalf("the position did not stop within %v of the stop (shutdown_timeout %v, drain_timeout %v)",
			s.lc.recycleDrain/2, s.lc.stopDrain, s.lc.recycleDrain)
	}
	took := time.Since(start)
	t.Logf("stopped %v after the stop request (shutdown_timeout %v)", took.Round(time.Millisecond), s.lc.stopDrain)
	if took < s.lc.stopDrain {
		t.Errorf("stopped after %v, before shutdown_timeout (%v): the request in flight was not given its drain", took, s.lc.stopDrain)
	}
	select {
	case <-old.exited:
	default:
		t.Errorf("the old worker %d still runs after the stop", old.PID())
	}
	if err := <-inFlight; err == nil {
		t.Errorf("the request never released was answered, want it cut by the kill at shutdown_timeout")
	}
}
