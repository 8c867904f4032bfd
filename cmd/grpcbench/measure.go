package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// target sends one inference request for client i (0 <= i < the
// concurrency) and reports whether it succeeded; end closes what the
// clients of one run opened.
type target interface {
	name() string
	infer(i int) error
	end()
}

// result is one run of one protocol at one concurrency.
type result struct {
	n, errors int
	elapsed   time.Duration
	p50, p99  time.Duration
	cpu       time.Duration // the master's CPU time over the run; -1 unknown
	firstErr  error
}

func (r result) rps() float64 { return float64(r.n) / r.elapsed.Seconds() }

func (r result) cpuPerRequest() string {
	if r.cpu < 0 || r.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(r.cpu.Microseconds())/float64(r.n))
}

// measure runs c clients against t for d, each one request at a time.
func measure(t target, c int, d time.Duration, pid int) result {
	cpu0 := cpuTime(pid)
	start := time.Now()
	stop := start.Add(d)
	lat := make([][]time.Duration, c)
	errs := make([]int, c)
	var first error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := t.infer(i); err != nil {
					errs[i]++
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
					continue
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	t.end()
	r := result{elapsed: time.Since(start), cpu: -1, firstErr: first}
	if cpu0 >= 0 {
		r.cpu = cpuTime(pid) - cpu0
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	r.n = len(all)
	for _, e := range errs {
		r.errors += e
	}
	if len(all) > 0 {
		r.p50, r.p99 = all[len(all)/2], all[len(all)*99/100]
	}
	return r
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// cpuTime is utime+stime of pid from /proc/PID/stat (fields 14 and 15,
// in clock ticks of 1/100 s on Linux); -1 when pid is 0 or unreadable.
func cpuTime(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name (field 2) may hold spaces: count from after it.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
