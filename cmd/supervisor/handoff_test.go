package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSharedMemoryHandoff checks the prep → infer handoff through each
// prep worker's arena (a sealed memfd): the arena exists, a request's
// tensors land in it (its pages get allocated), a request larger than a
// slot still succeeds (inline), inline handoff makes no arena, and a prep
// worker killed outright does no harm to the infer worker that mapped it.
func TestSharedMemoryHandoff(t *testing.T) {
	big := inferBody(t, v2Tensor{"input", "FP32", []int64{1, 3, 224, 224}, seq(3*224*224, 1)})
	const frameBlocks = 3 * 224 * 224 * 4 / 512 // the input, in 512-byte blocks

	in := startInstance(t, options{prepWorkers: 1, prepSection: "handoff: shm"})
	prep := workerNamed(t, in, "prep-0")
	path := arenaOf(t, prep.PID)
	before := allocatedBlocks(t, path)
	if code, resp, _ := in.post("/v2/models/default/infer", big, nil); code != http.StatusOK {
		t.Fatalf("request through the arena: %d %s", code, resp)
	}
	if after := allocatedBlocks(t, path); after-before < frameBlocks {
		t.Fatalf("arena grew by %d blocks for a %d-block input: the tensors did not go through shared memory", after-before, frameBlocks)
	}
	infer := workerNamed(t, in, "infer-0")
	if err := syscall.Kill(prep.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, 30*time.Second, "the killed prep worker's arena gone and prep-0 replaced", func() bool {
		_, err := os.Stat(path)
		w := workerNamed(t, in, "prep-0")
		return os.IsNotExist(err) && w.PID != prep.PID && w.State == "ready"
	})
	// The infer worker that had mapped the dead prep worker's arena is
	// unaffected, and serves the replacement's arena.
	in.waitReady(30 * time.Second)
	if code, resp, _ := in.post("/v2/models/default/infer", big, nil); code != http.StatusOK {
		t.Fatalf("after the prep worker was killed: %d %s", code, resp)
	}
	if now := workerNamed(t, in, "infer-0"); now.PID != infer.PID || now.Restarts != 0 {
		t.Fatalf("infer-0 went from pid %d to %d (%d restarts): a dead prep worker's arena must not hurt it", infer.PID, now.PID, now.Restarts)
	}

	// 600KB of input does not fit a 64KiB slot: it goes inline, and works.
	small := startInstance(t, options{prepWorkers: 1, prepSection: "handoff: shm\n  arena_slot_bytes: 64KiB"})
	path = arenaOf(t, workerNamed(t, small, "prep-0").PID)
	before = allocatedBlocks(t, path)
	if code, resp, _ := small.post("/v2/models/default/infer", big, nil); code != http.StatusOK {
		t.Fatalf("request larger than a slot: %d %s", code, resp)
	}
	if after := allocatedBlocks(t, path); after != before {
		t.Fatalf("a request larger than its slot was written into the arena (%d -> %d blocks)", before, after)
	}

	inline := startInstance(t, options{prepWorkers: 1, prepSection: "handoff: inline"})
	if path, ok := findArena(workerNamed(t, inline, "prep-0").PID); ok {
		t.Fatalf("inline handoff made an arena: %s", path)
	}
	if code, resp, _ := inline.post("/v2/models/default/infer", big, nil); code != http.StatusOK {
		t.Fatalf("inline handoff: %d %s", code, resp)
	}
}

// arenaOf is the /proc path of the prep worker's arena memfd.
func arenaOf(t *testing.T, pid int) string {
	t.Helper()
	path, ok := findArena(pid)
	if !ok {
		t.Fatalf("prep worker %d has no arena memfd open", pid)
	}
	return path
}

// findArena looks through /proc/<pid>/fd for the arena memfd.
func findArena(pid int) (string, bool) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, "/memfd:supervisor-arena") {
			return p, true
		}
	}
	return "", false
}

func allocatedBlocks(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatalf("arena %s: %v", path, err)
	}
	return st.Blocks
}
