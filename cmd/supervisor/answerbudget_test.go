package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

// TestUnreadAnswersStayWithinTheBudget: clients that ask for answers
// three times their inflated request (hostile.AnswerBomb: about 24 MB of
// JSON each, from 150 KB gzip'd on the wire) and never read them get
// one answer held under the 32 MiB body budget and 503 for the rest,
// which the master refuses from their header, unread: its peak RSS
// stays within rest + budget + a margin (read whole before being
// refused, two prep workers' answers at a time took it well past), and
// a client that reads its answers is served meanwhile.
func TestUnreadAnswersStayWithinTheBudget(t *testing.T) {
	const budgetMiB, marginMiB = 32, 16
	in := startInstance(t, options{prepWorkers: 2,
		extra: fmt.Sprintf("limits:\n  max_body_bytes_in_flight: %dMiB\n  write_timeout: 60s\n", budgetMiB)})
	pid := in.cmd.Process.Pid
	rest := rssKiB(t, pid, false)
	hdr, z := hostile.AnswerBomb(8 << 20)
	req := append([]byte(fmt.Sprintf("POST /v2/models/types/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"+
		"Content-Encoding: gzip\r\nInference-Header-Content-Length: %d\r\nContent-Length: %d\r\n\r\n", len(hdr), len(z))), z...)
	const attackers = 8
	statuses := make(chan string, attackers)
	for range attackers {
		c := in.dial(t)
		_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
		go func() { statuses <- unreadStatus(c, req) }()
	}
	small := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	got := map[string]int{}
	for range attackers {
		if code, resp, _ := in.post("/v2/models/mlp/infer", small, nil); code != http.StatusOK {
			t.Errorf("a reading client beside the unread answers: %d %s", code, resp)
		}
		select {
		case s := <-statuses:
			got[s]++
		case <-time.After(60 * time.Second):
			t.Fatalf("the unread-answer clients' statuses so far %v: the rest got none within 60s", got)
		}
	}
	if got["200"] == 0 || got["200"]+got["503"] != attackers {
		t.Errorf("the unread-answer clients got %v, want one or more 200 and 503 for the rest", got)
	}
	peak := rssKiB(t, pid, true)
	t.Logf("statuses %v; master RSS at rest %d MiB, peak %d MiB (+%d MiB), budget %d MiB", got, rest>>10, peak>>10, (peak-rest)>>10, budgetMiB)
	if peak-rest > (budgetMiB+marginMiB)<<10 {
		t.Errorf("master peak RSS rose %d MiB over rest under unread answers, want at most the %d MiB budget + %d MiB", (peak-rest)>>10, budgetMiB, marginMiB)
	}
}

// unreadStatus sends req on c and returns its answer's status code,
// reading no more than the status line's buffer of the answer.
func unreadStatus(c net.Conn, req []byte) string {
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Write(req); err != nil {
		return "write: " + err.Error()
	}
	line, err := bufio.NewReaderSize(c, 4096).ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	if f := strings.Fields(line); len(f) > 1 {
		return f[1]
	}
	return line
}
