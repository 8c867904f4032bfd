package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// apiKey is the key the well-behaved client sends; auth is on for the
// whole run, so the unauthenticated attack meets it.
const apiKey = "hostile-suite-key-0123456789abcdef"

// server is one running `supervisor run`.
type server struct {
	cmd         *exec.Cmd
	addr        string // public host:port
	metrics     string // metrics host:port
	dir         string
	budget      int64
	exited      chan struct{}
	logPath     string
	bodyTimeout time.Duration
}

// serverOptions are what the suite varies between the full and the
// bounded run.
type serverOptions struct {
	bin, ortLib, modelsDir string
	budget                 int64         // limits.max_body_bytes_in_flight
	bodyTimeout            time.Duration // limits.body_timeout
	readTimeout            time.Duration // limits.read_timeout
	prepWorkers            int
}

// suiteConfig is the config under attack: the MLP with batching, API
// keys on, the shipped limits except the ones the options set.
func suiteConfig(o serverOptions, dir string, port, metricsPort int) string {
	return fmt.Sprintf(`listen: 127.0.0.1:%d
runtime_dir: %s
onnxruntime_library: %s
shutdown_timeout: 10s
boot_timeout: 120s
models:
  - {name: mlp, path: %s, batching: {max_batch_size: 8}}
prep:
  workers: %d
infer:
  workers: 1
  intra_op_threads: 1
placement:
  overcommit: true
limits:
  max_body_bytes_in_flight: %d
  body_timeout: %s
  read_timeout: %s
auth:
  api_keys: [%s]
metrics:
  listen: 127.0.0.1:%d
`, port, filepath.Join(dir, "run"), o.ortLib, filepath.Join(o.modelsDir, "mlp.onnx"), o.prepWorkers,
		o.budget, o.bodyTimeout, o.readTimeout, apiKey, metricsPort)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startServer writes the config, starts the binary and waits until
// /v2/health/ready answers 200.
func startServer(o serverOptions) (*server, error) {
	dir, err := os.MkdirTemp("", "hostile")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	mport, err := freePort()
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "supervisor.yaml")
	if err := os.WriteFile(cfgPath, []byte(suiteConfig(o, dir, port, mport)), 0o644); err != nil {
		return nil, err
	}
	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", port), metrics: fmt.Sprintf("127.0.0.1:%d", mport),
		dir: dir, budget: o.budget, exited: make(chan struct{}), logPath: filepath.Join(dir, "supervisor.log"), bodyTimeout: o.bodyTimeout}
	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(o.bin, "run", "-c", cfgPath)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	if err := s.waitReady(120 * time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("the supervisor exited before it was ready; its log is %s", s.logPath)
		default:
		}
		resp, err := http.Get("http://" + s.addr + "/v2/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the supervisor was not ready within %v; its log is %s", timeout, s.logPath)
}

// prepPIDs are the prep workers serving now, from /status.json.
func (s *server) prepPIDs() ([]int, error) {
	resp, err := http.Get("http://" + s.metrics + "/status.json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Processes []struct {
			Role  string `json:"role"`
			PID   int    `json:"pid"`
			Stale bool   `json:"stale"`
		} `json:"processes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("status.json: %w", err)
	}
	var pids []int
	for _, p := range r.Processes {
		if p.Role == "prep" && !p.Stale && p.PID > 0 {
			pids = append(pids, p.PID)
		}
	}
	if len(pids) == 0 {
		return nil, errors.New("status.json lists no prep worker")
	}
	return pids, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// alive reports whether the master still runs.
func (s *server) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop asks the master to stop (SIGTERM), kills it after 30s, and removes
// the run's directory.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	_ = os.RemoveAll(s.dir)
}
