package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/supervisor"
)

// The end-to-end tests run the real binary with real workers on loopback
// and Unix sockets. The binary is $SUPERVISOR_BIN (set by `make test`) or
// built once here; the models are generated once into a temp dir.
var (
	suiteDir  string
	binPath   string
	modelsDir string
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	var err error
	if suiteDir, err = os.MkdirTemp("", "sv-e2e"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(suiteDir)
	if binPath = os.Getenv("SUPERVISOR_BIN"); binPath == "" {
		binPath = filepath.Join(suiteDir, "supervisor")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build supervisor: %v\n%s", err, out)
			return 1
		}
	}
	modelsDir = filepath.Join(suiteDir, "models")
	if err := onnxmodel.WriteAll(modelsDir); err != nil {
		fmt.Fprintln(os.Stderr, "generate models:", err)
		return 1
	}
	return m.Run()
}

// needORT skips a test when the ONNX Runtime library is missing.
func needORT(t *testing.T) string {
	t.Helper()
	lib, err := ort.FindLibrary()
	if err != nil {
		t.Skipf("ONNX Runtime library not found (run `make setup`): %v", err)
	}
	return lib
}

// instance is one running `supervisor run`.
type instance struct {
	t          *testing.T
	cmd        *exec.Cmd
	config     string
	url        string
	runtimeDir string
	log        *syncBuffer

	exited chan struct{}
	err    error
}

// options tune the config an instance is started with.
type options struct {
	prepWorkers  int
	inferWorkers int
	maxBodyBytes string
	recycle      string // YAML lines for both pools' recycling keys
	extra        string // appended YAML
	models       string // YAML list items appended to models:, indented by 2
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startInstance writes a config, starts the binary and waits until
// /v2/health/ready answers 200.
func startInstance(t *testing.T, o options) *instance {
	t.Helper()
	lib := needORT(t)
	if o.prepWorkers == 0 {
		o.prepWorkers = 2
	}
	if o.inferWorkers == 0 {
		o.inferWorkers = 1
	}
	if o.maxBodyBytes == "" {
		o.maxBodyBytes = "8MiB"
	}
	// Short, unique runtime dir: Unix socket paths are limited to 108 bytes.
	rdParent, err := os.MkdirTemp("", "sv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rdParent) })
	port := freePort(t)
	in := &instance{
		t:          t,
		url:        fmt.Sprintf("http://127.0.0.1:%d", port),
		runtimeDir: filepath.Join(rdParent, "run"),
		config:     filepath.Join(t.TempDir(), "supervisor.yaml"),
		log:        &syncBuffer{},
		exited:     make(chan struct{}),
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
runtime_dir: %s
onnxruntime_library: %s
max_body_bytes: %s
shutdown_timeout: 10s
boot_timeout: 60s
models:
  - {name: default, path: %s}
  - {name: mlp, path: %s}
  - {name: types, path: %s}
  - {name: fixed, path: %s}
%s
prep:
  workers: %d
  %s
infer:
  workers: %d
  intra_op_threads: 1
  %s
%s`, port, in.runtimeDir, lib, o.maxBodyBytes,
		filepath.Join(modelsDir, "default.onnx"), filepath.Join(modelsDir, "mlp.onnx"),
		filepath.Join(modelsDir, "types.onnx"), filepath.Join(modelsDir, "fixed.onnx"), o.models,
		o.prepWorkers, o.recycle, o.inferWorkers, o.recycle, o.extra)
	if err := os.WriteFile(in.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	in.cmd = exec.Command(binPath, "run", "-c", in.config)
	in.cmd.Stdout, in.cmd.Stderr = in.log, in.log
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		in.err = in.cmd.Wait()
		close(in.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-in.exited:
		default:
			_ = in.cmd.Process.Kill()
			<-in.exited
		}
		if t.Failed() {
			t.Logf("supervisor log:\n%s", in.log.String())
		}
	})
	in.waitReady(90 * time.Second)
	return in
}

// pollUntil calls cond every 50ms until it holds, failing the test after
// timeout. For state that has no change notification to wait on.
func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out after %s waiting for: %s", timeout, what)
		}
	}
}

// waitReady polls /v2/health/ready until 200, failing on timeout or when
// the process exits first.
func (in *instance) waitReady(timeout time.Duration) {
	in.t.Helper()
	deadline := time.Now().Add(timeout)
	for attempt := 0; ; attempt++ {
		if code, _, _ := in.get("/v2/health/ready"); code == http.StatusOK {
			return
		}
		select {
		case <-in.exited:
			in.t.Fatalf("supervisor exited before it was ready: %v\n%s", in.err, in.log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			in.t.Fatalf("supervisor not ready after %s (%d polls)", timeout, attempt)
		}
	}
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

func (in *instance) get(path string) (int, []byte, http.Header) {
	return in.do(http.MethodGet, path, nil, nil)
}

func (in *instance) post(path string, body []byte, hdr map[string]string) (int, []byte, http.Header) {
	return in.do(http.MethodPost, path, body, hdr)
}

func (in *instance) do(method, path string, body []byte, hdr map[string]string) (int, []byte, http.Header) {
	req, err := http.NewRequest(method, in.url+path, bytes.NewReader(body))
	if err != nil {
		in.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// cli runs a supervisor subcommand against this instance's config.
func (in *instance) cli(args ...string) (string, error) {
	args = append(args, "-c", in.config)
	out, err := exec.Command(binPath, args...).CombinedOutput()
	return string(out), err
}

func (in *instance) status() supervisor.Status {
	in.t.Helper()
	out, err := in.cli("status", "--json")
	if err != nil {
		in.t.Fatalf("supervisor status: %v\n%s", err, out)
	}
	var st supervisor.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		in.t.Fatalf("decode status: %v\n%s", err, out)
	}
	return st
}

// terminate sends SIGTERM and waits for a clean exit.
func (in *instance) terminate(timeout time.Duration) {
	in.t.Helper()
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	in.waitExit(timeout)
}

func (in *instance) waitExit(timeout time.Duration) {
	in.t.Helper()
	select {
	case <-in.exited:
		if in.err != nil {
			in.t.Fatalf("supervisor exited with %v, want status 0\n%s", in.err, in.log.String())
		}
	case <-time.After(timeout):
		in.t.Fatalf("supervisor still running %s after it was told to stop", timeout)
	}
}

// processGone reports whether pid no longer exists (reaped, not a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// A zombie ("Z") still has an entry; it is not gone.
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "X"
}

// syncBuffer is a bytes.Buffer safe for the process's two output streams.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
