package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssOf reads a process's resident set size in bytes from
// /proc/<pid>/status (VmRSS); 0 when the process is gone.
func rssOf(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// peakSampler records the largest RSS of the master and of any one prep
// worker, sampled every interval until stop.
type peakSampler struct {
	master int
	preps  []int

	mu         sync.Mutex
	masterPeak int64
	prepPeak   int64
	done       chan struct{}
	stopped    chan struct{}
}

func samplePeaks(master int, preps []int, every time.Duration) *peakSampler {
	s := &peakSampler{master: master, preps: preps, done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(s.stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *peakSampler) sample() {
	m, p := rssOf(s.master), largestRSS(s.preps)
	s.mu.Lock()
	s.masterPeak, s.prepPeak = max(s.masterPeak, m), max(s.prepPeak, p)
	s.mu.Unlock()
}

// stop ends sampling and returns the peaks (bytes).
func (s *peakSampler) stop() (master, prep int64) {
	close(s.done)
	<-s.stopped
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.masterPeak, s.prepPeak
}

// largestRSS is the largest RSS of pids (the prep workers), bytes.
func largestRSS(pids []int) int64 {
	var most int64
	for _, pid := range pids {
		most = max(most, rssOf(pid))
	}
	return most
}
