package respredis

import (
	"crypto/sha256"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// slowLookup is the time past which a lookup that should end at
// GetTimeout counts as waiting for something else. It is far above
// GetTimeout, so that a lookup descheduled on a busy machine running the
// race detector is not mistaken for one, and far below go-redis's read
// timeout (5s by default), the wait a lookup must never do.
const slowLookup = time.Second

// blackHole is a TCP server that accepts connections and reads what is
// sent but never answers: a Redis that hangs (stopped by SIGSTOP, a full
// event loop, a network that drops replies). It returns the server's URL and
// the number of its connection goroutines alive, which run in this test
// process and so must not be charged to the client.
func blackHole(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var live atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			live.Add(1)
			go func() {
				defer live.Add(-1)
				_, _ = c.Read(make([]byte, 1<<16))
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "redis://" + ln.Addr().String() + "/0", &live
}

// TestRedisThatNeverAnswers: against a server that accepts and never
// replies, concurrent lookups each return a miss within about GetTimeout
// (not a dial or read timeout), and a flood of SETs holds at most maxSets
// goroutines, all of which end within setTimeout.
func TestRedisThatNeverAnswers(t *testing.T) {
	url, server := blackHole(t)
	c, err := New(url, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k := sha256.Sum256([]byte("k"))
	var wg sync.WaitGroup
	slow := make(chan time.Duration, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			if _, ok := c.Get(k, time.Time{}, maxLen); ok {
				t.Error("a server that never answers hit")
			}
			if d := time.Since(start); d > slowLookup {
				slow <- d
			}
		}()
	}
	wg.Wait()
	close(slow)
	for d := range slow {
		t.Errorf("a lookup on a hung Redis took %s, want about %s", d, GetTimeout)
	}

	before := runtime.NumGoroutine() - int(server.Load())
	for range 10 * maxSets {
		c.Set(k, []byte("answer"), time.Minute, maxLen) // must not block
	}
	if n := runtime.NumGoroutine() - int(server.Load()) - before; n > maxSets+8 {
		t.Errorf("%d SETs on a hung Redis hold %d more goroutines, want at most %d", 10*maxSets, n, maxSets)
	}
	if n := len(c.sets); n > maxSets {
		t.Errorf("%d SETs in flight, want at most %d", n, maxSets)
	}
	polltest.Until(t, 5*setTimeout, 20*time.Millisecond, "the hung SETs time out and release their tokens", func() bool {
		return len(c.sets) == 0
	})
}
