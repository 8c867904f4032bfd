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
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/supervisor-dev/supervisor/internal/conformance"
	"github.com/supervisor-dev/supervisor/internal/launch"
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
	// Drain, then kill after a minute; the log stays, the runtime dir goes.
	defer srv.Stop(time.Minute)
	fmt.Printf("%d node tests from %s; supervisor log: %s\n", len(cases), f.data, srv.Log)
	t0 := time.Now()
	if err := srv.WaitReady(f.bootTimeout, 500*time.Millisecond); err != nil {
		return err
	}
	fmt.Printf("ready after %s\n\n", time.Since(t0).Round(time.Second))
	results := checkAll("http://"+srv.Addr, cases, f.concurrency)
	conformance.Summary(os.Stdout, results, f.perGroup)
	if n, err := warmupFailures(srv.Log); err == nil {
		fmt.Printf("\nready models whose warm-up ONNX Runtime refused (they serve; the log says why): %d\n", n)
	}
	return nil
}

// warmupFailures counts the models the supervisor's log says serve though
// their warm-up failed (worker/infer: "its warm-up failed: it serves").
func warmupFailures(log string) (int, error) {
	b, err := os.ReadFile(log)
	if err != nil {
		return 0, err
	}
	return bytes.Count(b, []byte("its warm-up failed: it serves")), nil
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

// start writes the config listing every case (and, with
// -warmup-from-data, their warm-up inputs) and starts the supervisor; it
// does not wait for readiness. Stop keeps the log for reading.
func start(f flags, cases []conformance.Case) (*launch.Server, error) {
	return launch.Start(launch.Options{Bin: f.bin, DirPattern: "svconf", ConfigName: "conformance.yaml", KeepDir: true,
		Config: func(l launch.Layout) (string, error) { return config(f, cases, l) }})
}

// config is the one supervisor config serving every case.
func config(f flags, cases []conformance.Case, l launch.Layout) (string, error) {
	var warmups map[string]string
	if f.warmupFromData {
		var err error
		if warmups, err = conformance.WriteWarmups(cases, filepath.Join(l.Dir, "warmup")); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf(`listen: 127.0.0.1:%d
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
grpc:
  listen: 127.0.0.1:%d
`, l.Port, l.RuntimeDir, f.lib, f.bootTimeout, conformance.ConfigModels(cases, warmups), l.MetricsPort, l.GRPCPort), nil
}
