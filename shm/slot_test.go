package shm

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestClaimResetsTheSlot(t *testing.T) {
	b := newBoard(t, 2)
	s := b.Slot(1)
	spawned := time.Unix(1700000000, 5)
	s.Claim(Identity{Role: "prep", Name: "prep-0", Models: []string{"m"}, Device: "cpu", CPUs: "0-1", Generation: 7, RecycleAfter: 1000, Spawned: spawned})
	s.SetPID(99)
	s.SetState(Ready)
	s.SetReadyTime(spawned.Add(time.Second))
	s.Heartbeat(spawned.Add(2 * time.Second))
	s.SetQueueDepth(3)
	s.RequestStarted()
	s.RequestFinished(time.Millisecond, true)

	got := b.SlotSnapshot(1)
	if got.Role != "prep" || got.Name != "prep-0" || got.Device != "cpu" || got.CPUs != "0-1" || !slices.Equal(got.Models, []string{"m"}) ||
		got.Generation != 7 || got.RecycleAfter != 1000 || got.PID != 99 || got.State != Ready ||
		!got.Spawned.Equal(spawned) || !got.Ready.Equal(spawned.Add(time.Second)) || !got.Heartbeat.Equal(spawned.Add(2*time.Second)) ||
		got.QueueDepth != 3 || got.Requests != 1 || got.Errors != 1 || got.InFlight != 0 || got.Latency.Count() != 1 || got.Torn {
		t.Errorf("slot after use = %+v", got)
	}

	s.Claim(Identity{Role: "infer", Name: "infer-0", Generation: 8})
	got = b.SlotSnapshot(1)
	want := SlotSnapshot{Index: 1, State: Starting, Role: "infer", Name: "infer-0", Generation: 8}
	if got.Role != want.Role || got.Name != want.Name || got.Generation != 8 || got.State != Starting || got.PID != 0 ||
		got.Device != "" || got.Models != nil || !got.Spawned.IsZero() || !got.Ready.IsZero() || !got.Heartbeat.IsZero() ||
		got.Requests != 0 || got.Errors != 0 || got.QueueDepth != 0 || got.Latency.Count() != 0 || got.Latency.Sum != 0 {
		t.Errorf("slot after re-Claim = %+v, want a fresh %+v", got, want)
	}
}

// TestConcurrentCountersAreExact: many goroutines update one slot while a
// reader snapshots continuously; the reader sees monotonic counts and the
// final snapshot is exact.
func TestConcurrentCountersAreExact(t *testing.T) {
	const writers, perWriter = 8, 5000
	b := newBoard(t, 4)
	s := b.Slot(2)
	s.Claim(Identity{Name: "infer-0"})

	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < perWriter; i++ {
				s.RequestStarted()
				s.ObserveQueueTime(time.Duration(i%3) * time.Millisecond)
				s.ObserveBatchSize(1 + i%8)
				s.RequestFinished(time.Duration(1+i%4)*time.Millisecond, i%10 == 0)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	close(start)
	var last SlotSnapshot
	var reads int
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		snap := b.SlotSnapshot(2)
		reads++
		if snap.Torn || snap.Name != "infer-0" {
			t.Fatalf("snapshot %d: torn or wrong identity: %+v", reads, snap)
		}
		if snap.Requests < last.Requests || snap.Errors < last.Errors || snap.Latency.Count() < last.Latency.Count() {
			t.Fatalf("counts went backwards: %d/%d/%d after %d/%d/%d", snap.Requests, snap.Errors, snap.Latency.Count(), last.Requests, last.Errors, last.Latency.Count())
		}
		if snap.InFlight < 0 || snap.InFlight > writers {
			t.Fatalf("in-flight = %d, want 0..%d", snap.InFlight, writers)
		}
		last = snap
	}

	got := b.SlotSnapshot(2)
	n := uint64(writers * perWriter)
	if got.Requests != n || got.Errors != n/10 || got.InFlight != 0 || got.Latency.Count() != n || got.QueueTime.Count() != n || got.BatchSize.Count() != n {
		t.Fatalf("final = requests %d errors %d in-flight %d latency %d queue %d batch %d; want %d, %d, 0, %d, %d, %d",
			got.Requests, got.Errors, got.InFlight, got.Latency.Count(), got.QueueTime.Count(), got.BatchSize.Count(), n, n/10, n, n, n)
	}
	// latencies 1..4ms, a quarter each: le=1ms, le=2.5ms (2ms), le=5ms (3ms, 4ms)
	if got.Latency.Counts[4] != n/4 || got.Latency.Counts[5] != n/4 || got.Latency.Counts[6] != n/2 {
		t.Errorf("latency buckets = %v, want %d, %d, %d at le=1ms, 2.5ms, 5ms", got.Latency.Counts, n/4, n/4, n/2)
	}
	if want := float64(n/4) * (1 + 2 + 3 + 4) / 1000; abs(got.Latency.Sum-want) > 1e-6 {
		t.Errorf("latency sum = %v, want %v", got.Latency.Sum, want)
	}
	if want := float64(n/8) * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8); got.BatchSize.Sum != want {
		t.Errorf("batch sum = %v, want %v", got.BatchSize.Sum, want)
	}
	t.Logf("%d snapshots during %d updates", reads, n)
}

// TestSeqlockNeverMixesIdentities: a writer re-Claims a slot with two
// alternating identities while a reader snapshots; every snapshot must be
// one identity or the other.
func TestSeqlockNeverMixesIdentities(t *testing.T) {
	ids := [2]Identity{
		{Role: "prep", Name: "prep-0000000000000000000000000000000000000000000", Models: []string{"a", "b", "c"}, Device: "cpu", CPUs: "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15", Generation: 1, RecycleAfter: 11},
		{Role: "infer", Name: "i", Models: []string{"resnet50-very-long-model-name-to-cross-words"}, Device: "GPU-8f2a3c4e-1111-2222-3333-444455556666", CPUs: "16-31", Generation: 2, RecycleAfter: 22},
	}
	b := newBoard(t, 1)
	s := b.Slot(0)
	s.Claim(ids[0])

	const reads = 20000
	var readsDone atomic.Int64
	stop := make(chan struct{})
	writerDone := make(chan int)
	go func() {
		claims := 0
		for {
			select {
			case <-stop:
				writerDone <- claims
				return
			default:
			}
			s.Claim(ids[claims%2])
			claims++
			// Let the reader finish one snapshot before the next Claim,
			// so it always makes progress; the next Claim then overlaps
			// the reader's next copy.
			for seen := readsDone.Load(); readsDone.Load() == seen; {
				select {
				case <-stop:
					writerDone <- claims
					return
				default:
					runtime.Gosched() // with GOMAXPROCS=1 the reader needs the P
				}
			}
		}
	}()

	seen := [2]int{}
	torn := 0
	for i := 0; i < reads; i++ {
		snap := b.SlotSnapshot(0)
		readsDone.Add(1)
		if snap.Torn { // no identity at all is not a mix
			torn++
			continue
		}
		k := match(snap, ids)
		if k < 0 {
			close(stop)
			<-writerDone
			t.Fatalf("snapshot %d mixes identities: %+v", i, snap)
		}
		seen[k]++
	}
	close(stop)
	claims := <-writerDone
	if seen[0] == 0 || seen[1] == 0 {
		t.Errorf("saw identities %v times, want both", seen)
	}
	t.Logf("%d claims, %d reads: %v, %d torn", claims, reads, seen, torn)
}

// match returns which identity snap holds, or -1 for a mix.
func match(snap SlotSnapshot, ids [2]Identity) int {
	for k, id := range ids {
		if snap.Role == id.Role && snap.Name == id.Name && slices.Equal(snap.Models, id.Models) && snap.Device == id.Device &&
			snap.CPUs == id.CPUs && snap.Generation == id.Generation && snap.RecycleAfter == id.RecycleAfter && snap.State == Starting {
			return k
		}
	}
	return -1
}

// TestReaderGivesUpOnAnAbandonedClaim: a master that died inside Claim
// leaves the sequence odd; readers must return (Torn) rather than spin.
func TestReaderGivesUpOnAnAbandonedClaim(t *testing.T) {
	b := newBoard(t, 1)
	s := b.Slot(0)
	s.Claim(Identity{Name: "x"})
	atomic.AddUint64(&s.l.seq, 1) // odd: a Claim that never finished
	snap := b.SlotSnapshot(0)
	if !snap.Torn || snap.Name != "" {
		t.Errorf("snapshot of an abandoned claim = %+v, want Torn with no identity", snap)
	}
	s.Claim(Identity{Name: "y"}) // the next Claim repairs the slot
	if snap := b.SlotSnapshot(0); snap.Torn || snap.Name != "y" {
		t.Errorf("snapshot after re-Claim = %+v, want name y", snap)
	}
}

func TestStaleByGeneration(t *testing.T) {
	b := newBoard(t, 2)
	b.Slot(0).Claim(Identity{Name: "old", Generation: 7})
	b.Slot(0).SetPID(os.Getpid())
	b.Slot(1).Claim(Identity{Name: "new", Generation: 7})
	b.Slot(1).SetPID(os.Getpid())
	if s := b.SlotSnapshot(0); s.Stale(b.Header()) {
		t.Errorf("live slot of the current generation is stale: %+v", s)
	}
	b.SetGeneration(8)
	b.Slot(1).Claim(Identity{Name: "new", Generation: 8})
	h := b.Header()
	if s := b.SlotSnapshot(0); !s.Stale(h) {
		t.Errorf("slot of generation 7 under header generation 8 is not stale")
	}
	if s := b.SlotSnapshot(1); s.Stale(h) {
		t.Errorf("starting slot (pid 0) of the current generation is stale")
	}
}

func ExampleSlot() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	board, _ := Create(dir+"/board", 4, os.Getpid(), 1)
	defer board.Remove()

	// master, before spawning
	slot := board.Slot(0)
	slot.Claim(Identity{Role: "infer", Name: "infer-0", Models: []string{"resnet50"}, Device: "cpu", CPUs: "0-1", Generation: 1})

	// worker, per request
	slot.RequestStarted()
	slot.RequestFinished(3*time.Millisecond, false)

	// status
	for _, s := range board.Snapshot() {
		if s.State != Free {
			fmt.Println(s.Name, s.State, s.Requests, s.Latency.Count())
		}
	}
	// Output: infer-0 starting 1 1
}
