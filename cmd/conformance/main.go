// Command conformance measures how much of the ONNX backend node test suite
// (Debian's libonnx-testdata) one supervisor serves: it writes a config
// listing every node model, starts `supervisor run` on it, and reports how
// many models are ready, why the others are unavailable (grouped), and how
// many answer their test_data_set_0 correctly. See internal/conformance.
//
//	go run ./cmd/conformance -bin bin/supervisor [-data DIR] [-filter REGEXP] [-warmup-from-data]
//
// It exits 1 only when it cannot measure (no test data, no library, the
// server never became ready); the counts themselves are the result.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/supervisor-dev/supervisor/internal/conformance"
	"github.com/supervisor-dev/supervisor/internal/ort"
)

type flags struct {
	bin, data, filter, lib string
	concurrency            int
	bootTimeout            time.Duration
	perGroup               int
	warmupFromData         bool
}

func main() {
	var f flags
	flag.StringVar(&f.bin, "bin", "bin/supervisor", "supervisor binary")
	flag.StringVar(&f.data, "data", conformance.DefaultDir, "directory of node tests (one subdirectory per test)")
	flag.StringVar(&f.filter, "filter", "", "only tests whose directory name matches this regexp")
	flag.StringVar(&f.lib, "ort", "", "ONNX Runtime library (default: $ORT_LIBRARY or discovery)")
	flag.IntVar(&f.concurrency, "c", 4, "requests in flight")
	flag.DurationVar(&f.bootTimeout, "boot-timeout", 30*time.Minute, "how long loading every model may take")
	flag.IntVar(&f.perGroup, "names", 8, "model names shown per reason")
	flag.BoolVar(&f.warmupFromData, "warmup-from-data", false, "warm each model up with its own test inputs (warmup: FILE) instead of zeros")
	flag.Parse()
	if err := run(f); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func run(f flags) error {
	var filter *regexp.Regexp
	if f.filter != "" {
		var err error
		if filter, err = regexp.Compile(f.filter); err != nil {
			return fmt.Errorf("-filter: %w", err)
		}
	}
	cases, err := conformance.Cases(f.data, filter)
	if err != nil {
		return err
	}
	if len(cases) == 0 {
		return fmt.Errorf("no node tests under %q", f.data)
	}
	if f.lib == "" {
		if f.lib, err = ort.FindLibrary(); err != nil {
			return err
		}
	}
	srv, err := start(f, cases)
	if err != nil {
		return err
	}
	defer srv.stop()
	fmt.Printf("%d node tests from %s; supervisor log: %s\n", len(cases), f.data, srv.log)
	t0 := time.Now()
	if err := srv.waitReady(f.bootTimeout); err != nil {
		return err
	}
	fmt.Printf("ready after %s\n\n", time.Since(t0).Round(time.Second))
	results := checkAll(srv.url, cases, f.concurrency)
	conformance.Summary(os.Stdout, results, f.perGroup)
	return nil
}

// checkAll runs conformance.Check on every case, concurrency at a time.
func checkAll(url string, cases []conformance.Case, concurrency int) []conformance.Result {
	client := &http.Client{Timeout: 2 * time.Minute}
	results := make([]conformance.Result, len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = conformance.Check(client, url, cases[i])
			}
		}()
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// server is the supervisor under test.
type server struct {
	cmd    *exec.Cmd
	dir    string
	url    string
	log    string
	exited chan struct{}
}

func start(f flags, cases []conformance.Case) (*server, error) {
	dir, err := os.MkdirTemp("", "svconf")
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
	var warmups map[string]string
	if f.warmupFromData {
		if warmups, err = conformance.WriteWarmups(cases, filepath.Join(dir, "warmup")); err != nil {
			return nil, err
		}
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
runtime_dir: %s
onnxruntime_library: %s
boot_timeout: %s
max_body_bytes: 256MiB
%sprep:
  workers: 1
infer:
  workers: 1
  intra_op_threads: 1
placement:
  overcommit: true
metrics:
  listen: 127.0.0.1:%d
`, port, filepath.Join(dir, "run"), f.lib, f.bootTimeout, conformance.ConfigModels(cases, warmups), mport)
	cfgPath := filepath.Join(dir, "conformance.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	s := &server{dir: dir, url: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(dir, "supervisor.log"),
		exited: make(chan struct{})}
	logf, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(f.bin, "run", "-c", cfgPath)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", f.bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	return s, nil
}

var errExited = errors.New("the supervisor exited before it was ready (see its log)")

// waitReady polls /v2/health/ready until 200.
func (s *server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 5 * time.Second}
	for time.Now().Before(deadline) {
		if resp, err := client.Get(s.url + "/v2/health/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return errExited
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("the supervisor was not ready within %s", timeout)
}

// stop asks the supervisor to drain and exit, then kills it after a
// minute. The log stays for reading; the runtime dir goes.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	_ = os.RemoveAll(filepath.Join(s.dir, "run"))
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
