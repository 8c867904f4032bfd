package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/procinfo"
)

// twoCPUs returns two CPUs this process may use, or skips the test.
func twoCPUs(t *testing.T) (string, string) {
	t.Helper()
	allowed, err := affinity.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if allowed.Count() < 2 {
		t.Skipf("needs 2 CPUs to give each worker its own; this process may use only %q", allowed)
	}
	ids := allowed.Slice()
	return fmt.Sprint(ids[0]), fmt.Sprint(ids[1])
}

// TestWorkersArePinned starts the real supervisor with explicit cpus and
// checks each worker's actual placement: every thread's
// Cpus_allowed_list is the worker's cpuset, GOMAXPROCS (from the worker's
// "placed" log line) is its size, and status reports both.
func TestWorkersArePinned(t *testing.T) {
	inferCPU, prepCPU := twoCPUs(t)
	in := startInstance(t, options{prepWorkers: 1, inferWorkers: 1, inferCPUs: inferCPU, prepCPUs: prepCPU})
	want := map[string]string{"infer-0": inferCPU, "prep-0": prepCPU}
	st := in.status()
	if len(st.Workers) != 2 {
		t.Fatalf("status has %d workers, want 2: %+v", len(st.Workers), st.Workers)
	}
	placed := placedLines(t, in.log.String())
	for _, w := range st.Workers {
		if w.CPUs != want[w.Name] || w.Device != "cpu" {
			t.Errorf("status: %s on device %q cpus %q, want cpu and %q", w.Name, w.Device, w.CPUs, want[w.Name])
		}
		for task, mask := range threadMasks(t, w.PID) {
			if mask != want[w.Name] {
				t.Errorf("%s (pid %d) thread %s has Cpus_allowed_list %q, want %q", w.Name, w.PID, task, mask, want[w.Name])
			}
		}
		p, ok := placed[w.PID]
		if !ok {
			t.Errorf("%s (pid %d) logged no \"placed\" line", w.Name, w.PID)
			continue
		}
		if p.GOMAXPROCS != 1 || p.Affinity != want[w.Name] || p.CPUs != want[w.Name] {
			t.Errorf("%s logged %+v, want gomaxprocs 1 on %q", w.Name, p, want[w.Name])
		}
	}
	out, err := in.cli("status")
	if err != nil || !regexp.MustCompile(`(?m)^\d+ +infer +infer-0 +\d+ +cpu +`+inferCPU+` `).MatchString(out) {
		t.Errorf("status table lacks infer-0's device and cpus (%v):\n%s", err, out)
	}
}

// placedLine is a worker's "placed" log line.
type placedLine struct {
	PID        int    `json:"pid"`
	CPUs       string `json:"cpus"`
	Affinity   string `json:"affinity"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Message    string `json:"message"`
}

func placedLines(t *testing.T, log string) map[int]placedLine {
	t.Helper()
	lines := map[int]placedLine{}
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l placedLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == "placed" {
			lines[l.PID] = l
		}
	}
	return lines
}

// threadMasks returns the allowed CPUs of every thread of pid, as lists
// like "0-3".
func threadMasks(t *testing.T, pid int) map[string]string {
	t.Helper()
	threads, err := procinfo.Threads("", pid)
	if err != nil || len(threads) == 0 {
		t.Fatalf("no threads for pid %d: %v", pid, err)
	}
	masks := map[string]string{}
	for tid, cpus := range threads {
		masks[strconv.Itoa(tid)] = affinity.NewCPUSet(cpus...).String()
	}
	return masks
}

// TestCheckPrintsPlan: `supervisor check` prints, after the effective
// config, the TimeoutStopSec its stop bound needs (the default: 60s, so
// 90) and where each worker would run on this host; a config that does not
// fit the host fails with the line of the key to change.
func TestCheckPrintsPlan(t *testing.T) {
	inferCPU, prepCPU := twoCPUs(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	conf := fmt.Sprintf("infer:\n  cpus: %q\nprep:\n  workers: 1\n  cpus: %q\nplacement:\n  master_cpus: none\n", inferCPU, prepCPU)
	if err := os.WriteFile(good, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(binPath, "check", "-c", good).Output() // models/ may be missing here: only stdout matters
	for _, re := range []string{
		`(?m)^# systemd: a stop takes up to 1m0s \(drain_grace \+ 2 × shutdown_timeout\): the unit needs TimeoutStopSec=90 or more$`,
		`(?m)^# Placement on this host: CPUs \S+ usable`,
		`(?m)^#   WORKER +DEVICE +NODE +CPUS$`,
		`(?m)^#   master +- +- +any \(none reserved\)$`,
		`(?m)^#   infer-0 +cpu +\d+ +` + inferCPU + `$`,
		`(?m)^#   prep-0 +cpu +\d+ +` + prepCPU + `$`,
	} {
		if !regexp.MustCompile(re).Match(out) {
			t.Errorf("check output lacks %s:\n%s", re, out)
		}
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("prep:\n  workers: 200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binPath, "check", "-c", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), bad+":2: prep.workers: request does not fit the CPUs") ||
		!strings.Contains(string(out), "placement.overcommit: true") {
		t.Errorf("check of 200 prep workers: %v\n%s", err, out)
	}
}
