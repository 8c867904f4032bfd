package front

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// TestCoarseDeadlinesCutSlowClients: with read, idle and write timeouts
// long enough to be kept by publicDeadlines (over a second) rather than
// armed on the socket, the three slow clients are still cut, each no
// earlier than its timeout and within a bound: a keep-alive connection
// left idle (idle_timeout), one trickling its header a byte at a time
// (slowloris: read_timeout), and one that never reads its 20 MiB
// answer (write_timeout, the answer's charge given back). The set's
// tick fired the deadlines.
func TestCoarseDeadlinesCutSlowClients(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	const bound = timeout + 5*time.Second
	f := startFront(t, func(c *config.Config) {
		c.Limits.MaxBodyBytesInFlight = 64 << 20
		c.Limits.ReadTimeout = config.Duration{Duration: timeout}
		c.Limits.IdleTimeout = config.Duration{Duration: timeout}
		c.Limits.WriteTimeout = config.Duration{Duration: timeout}
	})
	answerUpstream(t, f)
	fired := publicDeadlines.Fired()

	var wg sync.WaitGroup
	check := func(what string, took time.Duration) {
		if took < timeout || took > bound {
			t.Errorf("%s: cut after %v, want %v to %v", what, took, timeout, bound)
		}
	}
	idle, slow, unread := f.dial(t), f.dial(t), f.dial(t)
	wg.Add(2)
	go func() { // idle keep-alive
		defer wg.Done()
		c := idle
		_ = c.SetReadDeadline(time.Now().Add(2 * bound))
		if _, err := io.WriteString(c, "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Error(err)
			return
		}
		br := bufio.NewReader(c)
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("idle client: %v", err)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		start := time.Now()
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("idle client read %v, want the connection's close", err)
		}
		check("idle keep-alive connection", time.Since(start))
	}()
	go func() { // slowloris
		defer wg.Done()
		c := slow
		start := time.Now()
		head := "GET /v2/models/mlp HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200)
		pace := time.NewTicker(50 * time.Millisecond) // the attack's pace: a byte a tick
		defer pace.Stop()
		for i := 0; i < len(head); i++ {
			if _, err := c.Write([]byte{head[i]}); err != nil {
				check("slowloris", time.Since(start))
				return
			}
			if time.Since(start) > 2*bound {
				t.Error("slowloris: still connected after twice the bound")
				return
			}
			<-pace.C
		}
		t.Error("slowloris: sent its whole header without being cut")
	}()
	// Never reads its answer.
	_ = unread.(*net.TCPConn).SetReadBuffer(4 << 10)
	start := time.Now()
	askAnswer(t, unread, answerBytes)
	pollFor(t, "the unread 20 MiB answer charged", func() bool { return f.fr.adm.Bodies().InUse() >= answerBytes })
	f.waitBudgetEmpty(t)
	check("never-reading client", time.Since(start))
	wg.Wait()
	if n := publicDeadlines.Fired() - fired; n < 3 {
		t.Errorf("publicDeadlines fired %d deadlines, want at least 3: the timeouts were not the set's", n)
	}
}
