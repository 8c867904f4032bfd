package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/procinfo"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// TestListenerLimits sends what each limit on the public listener is for:
// an oversize header (431), a header and a body trickled slower than
// read_timeout (the connection is cut), connections beyond
// max_connections (503) and requests beyond max_in_flight (503 with
// Retry-After). Every answer is checked, and a normal request still
// succeeds afterwards.
func TestListenerLimits(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1,
		batching: map[string]string{"mlp": "{max_batch_size: 8, max_queue_delay: 1500ms}"},
		extra:    "limits:\n  max_header_bytes: 2KiB\n  read_timeout: 500ms\n  body_timeout: 500ms\n  body_min_rate: 0\n  max_connections: 4\n  max_in_flight: 2\n"})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})

	t.Run("oversize header", func(t *testing.T) {
		resp := rawExchange(t, in, "GET /v2 HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 4096)+"\r\n\r\n")
		if !strings.HasPrefix(resp, "HTTP/1.1 431") || !strings.Contains(resp, `"error":"request header is larger than limits.max_header_bytes"`) {
			t.Fatalf("oversize header answered:\n%.300s", resp)
		}
	})
	for name, parts := range map[string][]string{
		"slow header": {"GET /v2 HTTP/1.1\r\n", "Host: x\r\n", "X-A: 1\r\n", "X-B: 2\r\n", "X-C: 3\r\n"},
		"slow body":   {"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", "\"in", "put", "s\":"},
	} {
		t.Run(name, func(t *testing.T) {
			if cut := trickle(t, in, parts, 300*time.Millisecond); !cut {
				t.Fatal("the server kept a connection that trickles bytes for longer than read_timeout")
			}
		})
	}
	t.Run("max in flight", func(t *testing.T) {
		// Each request waits max_queue_delay (1.5s) in the batcher, so of
		// three sent at once two hold the listener at its cap and the
		// third is shed.
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		var retryAfter string
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _, hdr := in.post("/v2/models/mlp/infer", body, nil)
				mu.Lock()
				defer mu.Unlock()
				codes[code]++
				if code == http.StatusServiceUnavailable {
					retryAfter = hdr.Get("Retry-After")
				}
			}()
		}
		wg.Wait()
		if codes[http.StatusOK] != 2 || codes[http.StatusServiceUnavailable] != 1 || retryAfter == "" {
			t.Fatalf("3 requests at once with max_in_flight 2: %v (Retry-After %q), want two 200s and one 503 with Retry-After", codes, retryAfter)
		}
	})
	t.Run("too many connections", func(t *testing.T) {
		// Open them all at once: idle ones are cut after read_timeout.
		var conns []net.Conn
		for range 8 {
			conns = append(conns, in.dial(t))
		}
		var refused string
		for _, c := range conns[4:] {
			_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if b, _ := io.ReadAll(c); len(b) > 0 {
				refused = string(b)
				break
			}
		}
		if !strings.Contains(refused, " 503 ") {
			t.Fatalf("8 idle connections with max_connections 4: no 503 (got %q)", refused)
		}
	})
	// The refused connections are gone; a new one is served.
	pollUntil(t, 5*time.Second, "a normal request succeeds after the limits", func() bool {
		code, _, _ := in.post("/v2/models/mlp/infer", body, nil)
		return code == http.StatusOK
	})
}

// trickle writes parts every gap and reports whether the server cut the
// connection within 5s.
func trickle(t *testing.T, in *instance, parts []string, gap time.Duration) bool {
	t.Helper()
	conn := in.dial(t)
	closed := make(chan struct{})
	go func() {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		io.Copy(io.Discard, conn)
		close(closed)
	}()
	tick := time.NewTicker(gap)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for i := 0; ; i++ {
		if _, err := conn.Write([]byte(parts[i%len(parts)])); err != nil {
			return true
		}
		select {
		case <-closed:
			return true
		case <-deadline:
			return false
		case <-tick.C:
		}
	}
}

// TestAPIKeys: with keys configured a request needs one (401 without, 401
// with a wrong one), either header form works, health stays open, and a
// key over its rate gets 429.
func TestAPIKeys(t *testing.T) {
	const key = "test-key-0123456789abcdef"
	in := startInstance(t, options{prepWorkers: 1,
		extra: "auth:\n  api_keys: [" + key + "]\n  rate_limit: 1\n  rate_burst: 3\n"})
	if code, _, _ := in.get("/v2/health/ready"); code != http.StatusOK {
		t.Fatalf("health without a key: %d, want 200 (exempt_health)", code)
	}
	for name, hdr := range map[string]map[string]string{
		"missing": nil,
		"wrong":   {"Authorization": "Bearer not-the-key-0123456789"},
		"empty":   {"X-API-Key": ""},
	} {
		code, resp, h := in.do(http.MethodGet, "/v2/models/default", nil, hdr)
		if code != http.StatusUnauthorized || !strings.Contains(string(resp), `"error"`) || h.Get("WWW-Authenticate") == "" {
			t.Errorf("%s key: %d %s (WWW-Authenticate %q), want 401 with a V2 error", name, code, resp, h.Get("WWW-Authenticate"))
		}
	}
	codes := map[int]int{}
	for i := range 6 {
		hdr := map[string]string{"Authorization": "Bearer " + key}
		if i%2 == 1 {
			hdr = map[string]string{"X-API-Key": key}
		}
		code, _, _ := in.do(http.MethodGet, "/v2/models/default", nil, hdr)
		codes[code]++
	}
	// A burst of 3 at 1/s: six requests in well under 3s see at least two 429s.
	if codes[http.StatusOK] < 3 || codes[http.StatusTooManyRequests] < 2 || codes[http.StatusOK]+codes[http.StatusTooManyRequests] != 6 {
		t.Fatalf("six quick requests with the key: %v, want 3+ 200s and 2+ 429s", codes)
	}
}

// TestControlSocketRefusesOtherUsers loosens the control socket's mode by
// hand (a misconfiguration) and connects as an unprivileged user: the
// master still refuses it, from the peer's credentials (SO_PEERCRED).
func TestControlSocketRefusesOtherUsers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the CLI as another user")
	}
	in := startInstance(t, options{prepWorkers: 1})
	sock := control.SocketPath(in.runtimeDir)
	for _, p := range []string{filepath.Dir(filepath.Dir(sock)), filepath.Dir(sock)} {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "status", "--runtime-dir", in.runtimeDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "permission denied: uid 65534") {
		t.Fatalf("status as uid 65534: %v\n%s\nwant a refusal naming the uid", err, out)
	}
	if out, err := in.cli("status"); err != nil {
		t.Fatalf("status as root after a refusal: %v\n%s", err, out)
	}
}

// TestWorkersRunUnprivileged starts workers as nobody under a root master:
// every worker's real and effective uid and gid are nobody's, the master
// stays root, and inference works end to end (sockets made by the master
// and handed over, scoreboard writable).
func TestWorkersRunUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: only a root master may start workers as another user")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody on this machine")
	}
	// nobody must read the generated models.
	for _, d := range []string{suiteDir, modelsDir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in := startInstance(t, options{prepWorkers: 1, extra: "workers:\n  user: nobody\n"})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	if code, resp, _ := in.post("/v2/models/mlp/infer", body, nil); code != http.StatusOK {
		t.Fatalf("inference through unprivileged workers: %d %s", code, resp)
	}
	if uid := procIDs(t, in.cmd.Process.Pid, "Uid"); uid != "0" {
		t.Errorf("master uid %s, want 0", uid)
	}
	for _, w := range in.status().Workers {
		if uid, gid := procIDs(t, w.PID, "Uid"), procIDs(t, w.PID, "Gid"); uid != nobody.Uid || gid != nobody.Gid {
			t.Errorf("%s (pid %d) runs as uid %s gid %s, want nobody (%s/%s)", w.Name, w.PID, uid, gid, nobody.Uid, nobody.Gid)
		}
	}
}

// procIDs returns a process's uid or gid (field "Uid" or "Gid"): one
// number when real, effective, saved and filesystem ids agree, else all
// four joined by "/".
func procIDs(t *testing.T, pid int, field string) string {
	t.Helper()
	p, err := procinfo.Read("", pid)
	if err != nil {
		t.Fatal(err)
	}
	ids := p.UIDs
	if field == "Gid" {
		ids = p.GIDs
	}
	if ids[1] == ids[0] && ids[2] == ids[0] && ids[3] == ids[0] {
		return strconv.FormatUint(ids[0], 10)
	}
	return fmt.Sprintf("%d/%d/%d/%d", ids[0], ids[1], ids[2], ids[3])
}

// TestClientDeadlineReachesTheInferQueue: a client that will wait 200ms
// (X-Request-Timeout) for a model that holds requests 3s in its queue
// gets its answer (503/504) at its deadline, and the infer worker drops the
// request from its queue then instead of running it at 3s: the deadline
// travelled master → prep → infer. A malformed value gets 400. The bounds
// only tell the deadline from the queue delay, with seconds to spare for a
// busy machine: 2s for the answer, the queue delay for the drop.
func TestClientDeadlineReachesTheInferQueue(t *testing.T) {
	const queueDelay = 3 * time.Second
	in := startInstance(t, options{prepWorkers: 1,
		batching: map[string]string{"mlp": fmt.Sprintf("{max_batch_size: 8, max_queue_delay: %s}", queueDelay)}})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	start := time.Now()
	code, resp, _ := in.post("/v2/models/mlp/infer", body, map[string]string{"X-Request-Timeout": "200ms"})
	if took := time.Since(start); (code != http.StatusServiceUnavailable && code != http.StatusGatewayTimeout) || took > 2*time.Second {
		t.Fatalf("with a 200ms deadline: %d after %s (%s), want 503 or 504 at the deadline", code, took, resp)
	}
	t.Logf("answered %d after %s", code, time.Since(start))
	// Dropped, not run: the queue delay would have run it at 3s.
	var stats []byte
	pollUntil(t, queueDelay-300*time.Millisecond-time.Since(start), "the infer worker drops the expired request", func() bool {
		_, stats, _ = in.get("/v2/models/mlp/stats")
		return strings.Contains(string(stats), `"fail":{"count":1`)
	})
	if strings.Contains(string(stats), `"success":{"count":1`) {
		t.Fatalf("the expired request ran: %s", stats)
	}
	if code, resp, _ := in.post("/v2/models/mlp/infer", body, map[string]string{"X-Request-Timeout": "soon"}); code != http.StatusBadRequest {
		t.Errorf("X-Request-Timeout: soon got %d %s, want 400", code, resp)
	}
	if code, _, _ := in.post("/v2/models/mlp/infer", body, map[string]string{"X-Request-Timeout": "5s"}); code != http.StatusOK {
		t.Errorf("with a 5s deadline: %d, want 200", code)
	}
}

// TestFileDescriptorsStayBounded holds 64 client connections open against
// max_connections 8: the master refuses the rest, so its open descriptors
// grow by about 8, not 64.
func TestFileDescriptorsStayBounded(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, extra: "limits:\n  max_connections: 8\n"})
	pid := in.cmd.Process.Pid
	base := openFDs(t, pid)
	for range 64 {
		in.dial(t) // held open until the test ends
	}
	// The refused ones are answered and closed at once; let the master get
	// through its accept backlog.
	var n int
	pollUntil(t, 10*time.Second, "the master holds at most max_connections client connections", func() bool {
		n = openFDs(t, pid)
		return n-base <= 8+2
	})
	t.Logf("64 client connections, max_connections 8: the master's descriptors went from %d to %d", base, n)
}

func openFDs(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestMemoryStaysBoundedUnderLargeBodies floods the master with 6MiB
// bodies from 24 clients at once: bodies are bounded (max_body_bytes) and
// so are the connections reading them (max_connections), so the master's
// peak resident memory stays within a few bodies per connection, however
// many requests arrive. Every request gets an answer (a V2 error for a
// body that is not a valid request, or 503 when over the cap).
func TestMemoryStaysBoundedUnderLargeBodies(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, extra: "limits:\n  max_connections: 8\n"})
	pid := in.cmd.Process.Pid
	base := rssKiB(t, pid, false)
	body := make([]byte, 6<<20) // zeros: not JSON, answered 400 by prep
	const clients, rounds = 24, 4
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if code, _, _ := in.post("/v2/models/default/infer", body, nil); code == 0 {
					refused.Add(1) // at the connection cap: a connection error
				}
			}
		}()
	}
	wg.Wait()
	// 8 connections × one 6MiB body each, with its copy for the lb and the
	// garbage collector's headroom: less than the 24 clients' bodies at
	// once (144MiB) would take alone.
	const limitKiB = 120 << 10
	peak := rssKiB(t, pid, true)
	if peak-base > limitKiB {
		t.Fatalf("master peak RSS grew %d KiB (%d -> %d) under %d requests of 6MiB, want at most %d KiB", peak-base, base, peak, clients*rounds, limitKiB)
	}
	t.Logf("%d requests of 6MiB from %d clients (%d refused at the connection cap): master RSS %d MiB, peak %d MiB",
		clients*rounds, clients, refused.Load(), base>>10, peak>>10)
}

// rssKiB is a process's RSS, or its peak RSS, in KiB.
func rssKiB(t *testing.T, pid int, peak bool) int64 {
	t.Helper()
	p, err := procinfo.Read("", pid)
	if err != nil {
		t.Fatal(err)
	}
	if peak {
		return int64(p.PeakRSS >> 10)
	}
	return int64(p.RSS >> 10)
}

// TestClientThatNeverReadsPinsNoWorker sends a request whose ~17MB answer
// cannot fit the socket buffers and never reads it: the master's lb has
// read the whole answer from the prep worker, so the lb shows nothing in
// flight and other clients are served while that client still holds its
// connection (bounded by limits.write_timeout).
func TestClientThatNeverReadsPinsNoWorker(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, maxBodyBytes: "32MiB"})
	const rows = 400000
	header := fmt.Sprintf(`{"inputs":[{"name":"x","shape":[%d,16],"datatype":"FP32","parameters":{"binary_data_size":%d}}]}`, rows, rows*64)
	conn := in.dial(t)
	fmt.Fprintf(conn, "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nInference-Header-Content-Length: %d\r\nContent-Length: %d\r\n\r\n%s",
		len(header), len(header)+rows*64, header)
	if _, err := conn.Write(make([]byte, rows*64)); err != nil {
		t.Fatal(err)
	}
	// Served, yet never read: the answer waits in the master.
	pollUntil(t, 30*time.Second, "the big request is answered by the prep worker", func() bool {
		return metricValue(t, in, `nv_inference_request_success{model="mlp",version="1"}`) >= 1
	})
	// The lb finishes reading the answer from the prep worker, then holds
	// nothing upstream, though the client has read nothing (the write to
	// it is bounded by write_timeout, 60s: far beyond this wait).
	pollUntil(t, 10*time.Second, "the lb has nothing in flight on prep workers while the client does not read", func() bool {
		return metricValue(t, in, `supervisor_lb_inflight{`) == 0
	})
	small := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	for range 5 {
		if code, resp, _ := in.post("/v2/models/mlp/infer", small, nil); code != http.StatusOK {
			t.Fatalf("another client while one does not read: %d %s", code, resp)
		}
	}
}

// metricValue sums the /metrics samples whose line starts with prefix.
func metricValue(t *testing.T, in *instance, prefix string) float64 {
	t.Helper()
	resp, err := httpClient.Get(in.metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, prefix) {
			var v float64
			fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v)
			sum += v
		}
	}
	return sum
}
