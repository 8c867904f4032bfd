package batch

import (
	"context"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/hangup"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// BenchmarkQueuedIdleCPU is the CPU a model's batcher spends while 1,024
// requests that can be abandoned (each on its own socket, whose peer
// stays) wait behind a run that holds the only instance: polled, the
// loop peeks at every one each abandonPoll; watched, nothing runs until
// a hang-up. cpu-% is of one core, over each 200 ms window (the whole
// process: the benchmark's own goroutines are idle meanwhile).
func BenchmarkQueuedIdleCPU(b *testing.B) {
	for _, watched := range []bool{false, true} {
		name := map[bool]string{false: "polled", true: "watched"}[watched]
		b.Run(name, func(b *testing.B) {
			m := newFakeModel(true)
			bt, err := New(Config{MaxQueueSize: 2048}, dynamicMD(), m.run)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { close(m.gate); bt.Close() }()
			go func() { _, _ = bt.Submit(context.Background(), rowsReq(0, 1, 2)) }()
			<-m.started
			for i := range 1024 {
				peer := hangup.Peer{Conn: socketPair(b)}
				r := rowsReq(i+1, 1, 2)
				r.Abandoned = peer.Gone
				if watched {
					r.Watch = peer.Watch
				}
				go func() { _, _ = bt.Submit(context.Background(), r) }()
			}
			if !polltest.Wait(waitLimit, time.Millisecond, func() bool { return bt.depth.Load() == 1024 }) {
				b.Fatalf("%d requests queued within %s, want 1024", bt.depth.Load(), waitLimit)
			}
			b.ResetTimer()
			var spent time.Duration
			for range b.N {
				before := cpuTime(b)
				<-time.After(200 * time.Millisecond) // the measured window
				spent += cpuTime(b) - before
			}
			b.ReportMetric(100*float64(spent)/float64(time.Duration(b.N)*200*time.Millisecond), "cpu-%")
		})
	}
}

// socketPair is one end of a connected Unix socket pair whose other end
// stays open until the benchmark ends.
func socketPair(b *testing.B) net.Conn {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		b.Fatal(err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		if conns[i], err = net.FileConn(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	b.Cleanup(func() { conns[0].Close(); conns[1].Close() })
	return conns[0]
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
