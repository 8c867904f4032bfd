package status

import (
	"sync"
	"time"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/procinfo"
)

// procSample is one process's resources as status shows them.
type procSample struct {
	RSS        uint64
	CPUPercent float64 // of one CPU, since the previous sample; 0 on the first
	CPUs       string  // allowed CPUs (Cpus_allowed_list), as a list like "0-3,8"
}

// CPUSampler turns cumulative CPU times into percentages between calls.
// Safe for concurrent use.
type CPUSampler struct {
	mu   sync.Mutex
	last map[int]cpuMark
}

type cpuMark struct {
	at    time.Time
	start uint64  // the process's start (procinfo.Process.Start): a reused pid is another process
	cpu   float64 // user+system seconds
}

// NewCPUSampler returns a sampler with no earlier sample: its first
// sample of a process says 0%.
func NewCPUSampler() *CPUSampler { return &CPUSampler{last: map[int]cpuMark{}} }

// sample reads every pid's RSS, CPU time and allowed CPUs (procinfo) and
// its CPU% since the previous sample of that process. Pids that are gone
// are forgotten.
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
		p, err := procinfo.Read("", pid)
		if err != nil {
			continue
		}
		ps := procSample{RSS: p.RSS, CPUs: affinity.NewCPUSet(p.CPUs...).String()}
		if prev, ok := s.last[pid]; ok && prev.start == p.Start && now.After(prev.at) {
			ps.CPUPercent = max(0, 100*(p.CPUSeconds-prev.cpu)/now.Sub(prev.at).Seconds())
		}
		s.last[pid] = cpuMark{at: now, start: p.Start, cpu: p.CPUSeconds}
		out[pid] = ps
	}
	for pid := range s.last {
		if !seen[pid] {
			delete(s.last, pid)
		}
	}
	return out
}

// cpuCount is the number of CPUs in a list such as "0-3,8"; 0 if unknown.
func cpuCount(list string) int {
	set, err := affinity.ParseCPUList(list)
	if err != nil {
		return 0
	}
	return set.Count()
}
