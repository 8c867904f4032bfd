package status

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	psutil "github.com/shirou/gopsutil/v3/process"
)

// procSample is one process's resources as status shows them.
type procSample struct {
	RSS        uint64
	CPUPercent float64 // of one CPU, since the previous sample; 0 on the first
	CPUs       string  // affinity list from /proc/<pid>/status
}

// CPUSampler turns cumulative CPU times into percentages between calls.
// Safe for concurrent use.
type CPUSampler struct {
	mu   sync.Mutex
	last map[int]cpuMark
}

type cpuMark struct {
	at  time.Time
	cpu float64 // user+system seconds
}

// NewCPUSampler returns a sampler with no earlier sample: its first
// sample of a process says 0%.
func NewCPUSampler() *CPUSampler { return &CPUSampler{last: map[int]cpuMark{}} }

// sample reads every pid's RSS and CPU time (gopsutil) and its CPU% since
// the previous sample of that pid. Pids that are gone are forgotten.
func (s *CPUSampler) sample(pids []int) map[int]procSample {
	now := time.Now()
	out := make(map[int]procSample, len(pids))
	seen := make(map[int]bool, len(pids))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pid := range pids {
		if pid <= 0 || seen[pid] {
			continue
		}
		seen[pid] = true
		p, err := psutil.NewProcess(int32(pid))
		if err != nil {
			continue
		}
		var ps procSample
		if mem, err := p.MemoryInfo(); err == nil {
			ps.RSS = mem.RSS
		}
		if t, err := p.Times(); err == nil {
			cpu := t.User + t.System
			if prev, ok := s.last[pid]; ok && now.After(prev.at) {
				ps.CPUPercent = max(0, 100*(cpu-prev.cpu)/now.Sub(prev.at).Seconds())
			}
			s.last[pid] = cpuMark{now, cpu}
		}
		ps.CPUs = allowedCPUs(pid)
		out[pid] = ps
	}
	for pid := range s.last {
		if !seen[pid] {
			delete(s.last, pid)
		}
	}
	return out
}

// allowedCPUs reads Cpus_allowed_list from /proc/<pid>/status: the CPUs a
// worker is pinned to, when its slot does not say.
func allowedCPUs(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// cpuCount is the number of CPUs in a list such as "0-3,8"; 0 if unknown.
func cpuCount(list string) int {
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				continue
			}
		}
		n += b - a + 1
	}
	return n
}
