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
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/internal/procinfo"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
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
	metricsURL string
	grpcAddr   string // the gRPC listener's host:port
	runtimeDir string
	log        *logFile
	client     *http.Client // nil: httpClient

	exited chan struct{}
	err    error
}

// options tune the config an instance is started with.
type options struct {
	prepWorkers  int
	inferWorkers int
	maxBodyBytes string
	recycle      string   // YAML lines for both pools' recycling keys
	extra        string   // appended YAML
	bin          string   // binary to run (default binPath)
	env          []string // added to the environment
	// batching maps a model name to its batching section as a YAML flow
	// mapping, such as "{max_batch_size: 8}".
	batching map[string]string
	// models adds models to the four generated ones: name -> .onnx path.
	models map[string]string
	// modelItems are YAML list items appended to models:, indented by 2.
	modelItems string
	// prepCPUs and inferCPUs are the pools' cpus (default auto).
	prepCPUs, inferCPUs string
	// prepSection is more YAML lines for the prep: section.
	prepSection string
	// modelNames are the generated models served (default all four):
	// ["mlp"] boots fastest.
	modelNames []string
	// noWait: startInstance returns once the process started, not once
	// it is ready.
	noWait bool
	// ortLibrary replaces the ONNX Runtime library path (default: the one
	// found).
	ortLibrary string
	// bootTimeout replaces boot_timeout (default 60s).
	bootTimeout string
	// https, when set, is the client of the public listener, served
	// over TLS (the tls section is in extra): the URL is https://.
	https *http.Client
}

// modelsYAML lists the generated models and o.models, each with its
// batching section from o.batching.
func (o options) modelsYAML() string {
	paths := map[string]string{}
	names := []string{"default", "mlp", "types", "fixed"}
	if len(o.modelNames) > 0 {
		names = append([]string(nil), o.modelNames...)
	}
	for _, n := range names {
		paths[n] = filepath.Join(modelsDir, n+".onnx")
	}
	for n, p := range o.models {
		names, paths[n] = append(names, n), p
	}
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  - {name: %s, path: %s", n, paths[n])
		if bt, ok := o.batching[n]; ok {
			fmt.Fprintf(&b, ", batching: %s", bt)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// freePorts returns n distinct free loopback ports: the listeners are all
// open while the ports are picked, because a port closed at once can be
// handed out again by the very next pick (an instance once got the same
// port for its gRPC and another listener).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// startInstance writes a config, starts the binary and waits until
// /v2/health/ready answers 200.
func startInstance(t *testing.T, o options) *instance {
	t.Helper()
	lib := needORT(t)
	if o.ortLibrary != "" {
		lib = o.ortLibrary
	}
	if o.prepWorkers == 0 {
		o.prepWorkers = 2
	}
	if o.inferWorkers == 0 {
		o.inferWorkers = 1
	}
	if o.maxBodyBytes == "" {
		o.maxBodyBytes = "8MiB"
	}
	if o.bootTimeout == "" {
		o.bootTimeout = "60s"
	}
	if o.prepCPUs == "" {
		o.prepCPUs = "auto"
	}
	if o.inferCPUs == "" {
		o.inferCPUs = "auto"
	}
	// Short, unique runtime dir: Unix socket paths are limited to 108 bytes.
	rdParent, err := os.MkdirTemp("", "sv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rdParent) })
	// Traversable, so workers running as another user reach their sockets.
	if err := os.Chmod(rdParent, 0o711); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 3) // public, metrics, gRPC
	port := ports[0]
	in := &instance{
		t:          t,
		url:        fmt.Sprintf("http://127.0.0.1:%d", port),
		runtimeDir: filepath.Join(rdParent, "run"),
		config:     filepath.Join(t.TempDir(), "supervisor.yaml"),
		log:        newLogFile(t),
		exited:     make(chan struct{}),
	}
	if o.https != nil {
		in.url, in.client = fmt.Sprintf("https://127.0.0.1:%d", port), o.https
	}
	// Each instance its own metrics port: the default 8002 is shared.
	metricsPort := ports[1]
	in.metricsURL = fmt.Sprintf("http://127.0.0.1:%d", metricsPort)
	// And its own gRPC port: the default 8001 is shared too.
	in.grpcAddr = fmt.Sprintf("127.0.0.1:%d", ports[2])
	cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
runtime_dir: %s
onnxruntime_library: %s
max_body_bytes: %s
shutdown_timeout: 10s
boot_timeout: %s
models:
%sprep:
  workers: %d
  cpus: %q
  %s
  %s
infer:
  workers: %d
  intra_op_threads: 1
  cpus: %q
  %s
# The tests run more workers than a small CI machine has cores.
placement:
  overcommit: true
metrics:
  listen: 127.0.0.1:%d
grpc:
  listen: %s
%s`, port, in.runtimeDir, lib, o.maxBodyBytes, o.bootTimeout, o.modelsYAML()+o.modelItems,
		o.prepWorkers, o.prepCPUs, o.recycle, o.prepSection, o.inferWorkers, o.inferCPUs, o.recycle, metricsPort, in.grpcAddr, o.extra)
	if err := os.WriteFile(in.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := binPath
	if o.bin != "" {
		bin = o.bin
	}
	in.cmd = exec.Command(bin, "run", "-c", in.config)
	in.cmd.Env = append(os.Environ(), o.env...)
	// A file, not a pipe: a master started by an upgrade inherits it, and
	// Wait must not wait for that master to close it.
	in.cmd.Stdout, in.cmd.Stderr = in.log.f, in.log.f
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
		// A master started by an upgrade outlives the first one.
		if pid := in.servingPID(); pid > 0 && pid != in.cmd.Process.Pid {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// A killed master cannot remove its scoreboard; a clean stop did.
		for _, board := range shm.Boards(in.runtimeDir) {
			_ = os.Remove(board)
		}
		if t.Failed() {
			t.Logf("supervisor log:\n%s", in.log.String())
		}
	})
	if !o.noWait {
		in.waitReady(90 * time.Second)
	}
	return in
}

// pollUntil calls cond every 50ms until it holds, failing the test after
// timeout. For state that has no change notification to wait on.
func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	polltest.Until(t, timeout, 50*time.Millisecond, what, cond)
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
	code, b, h, _ := in.send(method, path, body, hdr)
	return code, b, h
}

// send is do, with the transport's error when no answer came (code 0).
func (in *instance) send(method, path string, body []byte, hdr map[string]string) (int, []byte, http.Header, error) {
	req, err := http.NewRequest(method, in.url+path, bytes.NewReader(body))
	if err != nil {
		in.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	client := httpClient
	if in.client != nil {
		client = in.client
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, nil
}

// cli runs a supervisor subcommand against this instance's config.
func (in *instance) cli(args ...string) (string, error) {
	args = append(args, "-c", in.config)
	out, err := exec.Command(binPath, args...).CombinedOutput()
	return string(out), err
}

func (in *instance) status() control.Status {
	in.t.Helper()
	out, err := in.cli("status", "--json")
	if err != nil {
		in.t.Fatalf("supervisor status: %v\n%s", err, out)
	}
	var st control.Status
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
	p, err := procinfo.Read("", pid)
	return err != nil || p.State == "X"
}

// processExited reports whether pid has exited: gone, or a zombie that
// its parent (init, for orphans) has yet to reap.
func processExited(pid int) bool { return procinfo.Exited("", pid) }

// stopProcess sends pid SIGSTOP and waits until every thread of it is
// stopped: a request sent before that may still be answered.
func stopProcess(t *testing.T, pid int) {
	t.Helper()
	sendSignal(t, pid, syscall.SIGSTOP)
	pollUntil(t, 10*time.Second, fmt.Sprintf("process %d stopped by SIGSTOP", pid), func() bool { return processStopped(pid) })
}

// processStopped reports whether every thread of pid is stopped (state T
// in /proc/<pid>/task/<tid>/stat). SIGSTOP takes effect later than kill
// returns: one thread is woken to start the group stop, and on a busy
// machine it may wait for a CPU while another thread goes on serving.
func processStopped(pid int) bool {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(stats) == 0 {
		return false
	}
	for _, p := range stats {
		b, err := os.ReadFile(p)
		i := bytes.LastIndexByte(b, ')') // the command name may hold anything
		if err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// logFile collects the output of a master and of the masters its upgrades
// start.
type logFile struct{ f *os.File }

func newLogFile(t *testing.T) *logFile {
	f, err := os.Create(filepath.Join(t.TempDir(), "supervisor.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &logFile{f}
}

func (l *logFile) String() string {
	b, _ := os.ReadFile(l.f.Name())
	return string(b)
}

// dial opens a raw TCP connection to the instance's public listener,
// closed when the test ends.
func (in *instance) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(in.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// workerNamed is the named worker in the instance's status.
func workerNamed(t *testing.T, in *instance, name string) control.WorkerStatus {
	t.Helper()
	for _, w := range in.status().Workers {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("no worker %s in status", name)
	return control.WorkerStatus{}
}

// servingPID is the pid in the instance's pid file: the master that serves.
func (in *instance) servingPID() int {
	b, err := os.ReadFile(control.PIDFile(in.runtimeDir))
	if err != nil {
		return 0
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return pid
}
