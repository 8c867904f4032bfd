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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// The operations matrix: every operation an operator or a package runs
// on a live supervisor, then every surface a client, a scraper or an
// operator uses, checked after each. A surface that stops answering after
// some operation (the metrics listener after an upgrade, issue 27) shows
// as one failed cell. Each operation also reads the log it wrote (master
// and workers, zerolog JSON) through scripts/log-errors: an error-level
// line the row does not expect fails the row's "log" cell.
//
// `make ops` runs it in full (OPS=full); `make test` runs a sample that
// still has both upgrades, a worker kill and the stop.

// opsState is what an instance remembers between requests: the response
// cache and the poison quarantine. A new master (an upgrade, a restart)
// starts with both empty; every other operation keeps them.
type opsState int

const (
	stateKept  opsState = iota // the cache still holds the cached body, the quarantine the poison one
	stateFresh                 // a new master: the first send fills them again
)

// operation is one row of the matrix.
type operation struct {
	name   string
	sample bool // also run by `make test` (without OPS=full)
	state  opsState
	do     func(o *opsRun, t *testing.T)
	// allow are the error-level lines the operation itself causes.
	allow []allowedLine
}

// allowedLine is an entry of a scripts/log-errors allow-list.
type allowedLine struct{ pattern, reason string }

// killAllow is the line the master writes when a worker it did not stop
// exits: the worker kill row SIGKILLs prep-0 and infer-0.
var killAllow = []allowedLine{{`"level":"error","role":"master".*"worker":"(prep|infer)-0".*"message":"worker exited unexpectedly; restarting"`,
	"worker kill: the test SIGKILLs prep-0 and infer-0; the master restarts them"}}

// poisonAllow are the lines of the poison body's crash of infer-0, which
// the poison check causes once after a new master, to quarantine it.
var poisonAllow = []allowedLine{
	{`^SIGFPE: floating-point exception`, "poison check: infer-0's Go runtime reports the SIGFPE of Mod(x, x-3) in ONNX Runtime"},
	{`"level":"error","role":"master".*"worker":"infer-0".*"message":"worker exited unexpectedly; restarting"`,
		"poison check: the master restarts infer-0 after the crash"},
}

// surface is one column: a check that returns nil when the surface
// answers as it should after an operation of the given state.
type surface struct {
	name  string
	check func(o *opsRun, state opsState) error
}

// opsRun is one run of the matrix on one instance.
type opsRun struct {
	t        *testing.T
	in       *instance
	bin      string // the installed binary upgrades re-execute
	poisoned bool   // the last poison check crashed infer-0 (its line is expected)
}

const (
	poisonPath = "/v2/models/poisoned/infer"
	cachedPath = "/v2/models/cached/infer"
)

var (
	poisonBody = modBody("1,2,3,4") // an element 3: Mod by x-3 divides by zero, SIGFPE
	cachedBody = []byte(`{"id":"ops","inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"data":[2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32]}]}`)
)

func opsOperations() []operation {
	return []operation{
		{name: "start", sample: true, state: stateFresh, do: func(*opsRun, *testing.T) {}},
		{name: "reload", sample: true, state: stateKept, do: (*opsRun).reload},
		{name: "repository unload+load", state: stateKept, do: (*opsRun).repository},
		{name: "recycle", state: stateKept, do: (*opsRun).recycle},
		{name: "worker kill", sample: true, state: stateKept, do: (*opsRun).killWorkers, allow: killAllow},
		{name: "upgrade 1", sample: true, state: stateFresh, do: (*opsRun).upgrade},
		{name: "upgrade 2", sample: true, state: stateFresh, do: (*opsRun).upgrade},
		{name: "stop, start", sample: true, state: stateFresh, do: (*opsRun).stopStart},
	}
}

func opsSurfaces() []surface {
	return []surface{
		{"HTTP infer", func(o *opsRun, _ opsState) error { return httpInfersMLP(o.in) }},
		{"gRPC infer", func(o *opsRun, _ opsState) error { return grpcInfersMLP(o.in) }},
		{"metrics", func(o *opsRun, _ opsState) error { return metricsScrape(o.in) }},
		{"status", func(o *opsRun, _ opsState) error { return o.statusAnswers() }},
		{"cache hit", (*opsRun).cacheHits},
		{"poison 422", (*opsRun).poisonRefused},
	}
}

// TestOperationsMatrix runs each operation on one instance (mlp, a cached
// copy of it with a response cache, the poison model ModByXMinus3 with
// poison_threshold 1, a spare mlp for the repository API, gRPC on,
// recycling after 150 requests) and checks every surface after it; it
// logs the table of operation × surface. OPS=full runs every operation.
func TestOperationsMatrix(t *testing.T) {
	needORT(t)
	full := os.Getenv("OPS") == "full"
	bin := filepath.Join(t.TempDir(), "supervisor")
	install(t, binPath, bin)
	dir := t.TempDir()
	mlp := filepath.Join(modelsDir, "mlp.onnx")
	in := startInstance(t, options{prepWorkers: 2, bin: bin, modelNames: []string{"mlp"},
		models: map[string]string{"poisoned": writeModel(t, dir, "poisoned", onnxmodel.ModByXMinus3())},
		modelItems: fmt.Sprintf("  - {name: cached, path: %s, response_cache: {enable: true, max_bytes: 1MiB, ttl: 1h}}\n"+
			"  - {name: spare, path: %s}\n", mlp, mlp),
		recycle: "max_requests: 150",
		extra:   "model_control: explicit\nlimits:\n  poison_threshold: 1\n"})
	o := &opsRun{t: t, in: in, bin: bin}
	surfaces := opsSurfaces()
	var rows [][]string
	header := []string{"operation"}
	for _, s := range surfaces {
		header = append(header, s.name)
	}
	// Deferred: an operation that fails outright (t.Fatal) still shows
	// the rows before it.
	defer func() {
		t.Logf("operations matrix (OPS=full: %t):\n%s", full, markdownTable(append(header, "log", "took"), rows))
	}()
	failed := false
	for _, op := range opsOperations() {
		if !full && !op.sample {
			continue
		}
		mark := len(in.log.String())
		start := time.Now()
		op.do(o, t)
		row := []string{op.name}
		o.poisoned = false
		for _, s := range surfaces {
			if err := s.check(o, op.state); err != nil {
				t.Errorf("after %s: %s: %v", op.name, s.name, err)
				row = append(row, "FAIL")
				failed = true
				continue
			}
			row = append(row, "pass")
		}
		allow := op.allow
		if o.poisoned {
			allow = append(append([]allowedLine(nil), allow...), poisonAllow...)
		}
		if out, err := o.logErrors(in.log.String()[mark:], allow); err != nil {
			t.Errorf("after %s: the log holds error-level lines the test did not expect (scripts/log-errors: %v):\n%s", op.name, err, out)
			row = append(row, "FAIL")
			failed = true
		} else {
			row = append(row, "pass")
		}
		rows = append(rows, append(row, time.Since(start).Round(100*time.Millisecond).String()))
		if failed && !full {
			break // the sample stops at the first failure; the full run shows every cell
		}
	}
	if out, err := in.cli("stop"); err != nil {
		t.Errorf("final stop: %v\n%s", err, out)
	}
}

// markdownTable renders header and rows as a Markdown table.
func markdownTable(header []string, rows [][]string) string {
	var b strings.Builder
	line := func(cells []string) { b.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range rows {
		line(r)
	}
	return b.String()
}

// logErrors runs scripts/log-errors on log with the allow-list given and
// returns its output; err is non-nil when it found an unexpected line.
func (o *opsRun) logErrors(log string, allow []allowedLine) (string, error) {
	dir := o.t.TempDir()
	var list strings.Builder
	for _, a := range allow {
		fmt.Fprintf(&list, "# %s\n%s\n\n", a.reason, a.pattern)
	}
	allowFile, logFile := filepath.Join(dir, "allow"), filepath.Join(dir, "log")
	if err := os.WriteFile(allowFile, []byte(list.String()), 0o644); err != nil {
		o.t.Fatal(err)
	}
	if err := os.WriteFile(logFile, []byte(log), 0o644); err != nil {
		o.t.Fatal(err)
	}
	out, err := exec.Command("../../scripts/log-errors", "-a", allowFile, logFile).CombinedOutput()
	return string(out), err
}

// reload re-reads the config: a new generation of workers.
func (o *opsRun) reload(t *testing.T) {
	before := o.in.status().Generation
	if out, err := o.in.cli("reload"); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	if g := o.in.status().Generation; g != before+1 {
		t.Fatalf("reload: generation %d, want %d", g, before+1)
	}
}

// repository unloads the spare model and loads it again through the
// repository API (each a reload).
func (o *opsRun) repository(t *testing.T) {
	for _, call := range []string{"unload", "load"} {
		if code, msg := repoCall(t, o.in, "/v2/repository/models/spare/"+call, ""); code != http.StatusOK {
			t.Fatalf("%s spare = %d %s, want 200", call, code, msg)
		}
	}
	wantServes(t, o.in, "spare", []byte(mlpRow))
}

// recycle sends mlp requests until every worker was recycled at least
// once (max_requests 150), bounded in requests and time, then waits until
// every replacement serves.
func (o *opsRun) recycle(t *testing.T) {
	before := map[string]int{}
	for _, w := range o.in.status().Workers {
		before[w.Name] = w.Recycles
	}
	recycled := func() bool {
		for _, w := range o.in.status().Workers {
			if w.Recycles == before[w.Name] {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(60 * time.Second)
	for sent := 0; !recycled(); sent += 4 * 50 {
		if sent > 4000 || time.Now().After(deadline) {
			t.Fatalf("recycle: not every worker recycled after %d requests: %+v", sent, o.in.status().Workers)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				for range 50 {
					if code, b, _ := o.in.post("/v2/models/mlp/infer", []byte(mlpRow), nil); code != http.StatusOK {
						errs <- fmt.Errorf("%d %s", code, b)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("recycle: a request failed while workers recycled: %v", err)
		}
	}
	pollUntil(t, 30*time.Second, "every worker ready after the recycles", func() bool { return o.statusAnswers() == nil })
}

// killWorkers SIGKILLs prep-0 and infer-0 and waits until both serve in
// new processes.
func (o *opsRun) killWorkers(t *testing.T) {
	old := map[string]int{}
	for _, name := range []string{"prep-0", "infer-0"} {
		old[name] = workerNamed(t, o.in, name).PID
		sendSignal(t, old[name], syscall.SIGKILL)
	}
	for name, pid := range old {
		pollUntil(t, 30*time.Second, fmt.Sprintf("%s restarted (was pid %d)", name, pid), func() bool {
			w := workerNamed(t, o.in, name)
			return w.PID != 0 && w.PID != pid && w.State == "ready"
		})
	}
	o.in.waitReady(30 * time.Second)
}

// upgrade runs `supervisor upgrade` and waits until the old master and
// its workers are gone.
func (o *opsRun) upgrade(t *testing.T) {
	prev := o.in.status()
	if out, err := o.in.cli("upgrade"); err != nil {
		t.Fatalf("upgrade: %v\n%s", err, out)
	}
	if pid := o.in.status().PID; pid == prev.PID {
		t.Fatalf("upgrade: the same master (pid %d) still serves", pid)
	}
	pollUntil(t, 30*time.Second, fmt.Sprintf("the old master %d exits", prev.PID), func() bool { return processGone(prev.PID) })
	for _, w := range prev.Workers {
		pollUntil(t, 30*time.Second, fmt.Sprintf("old worker %s (pid %d) exits", w.Name, w.PID), func() bool { return processGone(w.PID) })
	}
}

// stopStart runs `supervisor stop`, checks that every listener then
// refuses connections (none queues them) and that no process is left,
// and starts the same config again, as a restart of the service does.
func (o *opsRun) stopStart(t *testing.T) {
	st := o.in.status()
	if out, err := o.in.cli("stop"); err != nil {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	pollUntil(t, 30*time.Second, fmt.Sprintf("the master %d exits", st.PID), func() bool { return processGone(st.PID) })
	for _, w := range st.Workers {
		if !processGone(w.PID) {
			t.Errorf("stop returned with worker %s (pid %d) still running", w.Name, w.PID)
		}
	}
	for _, addr := range []string{strings.TrimPrefix(o.in.url, "http://"), o.in.grpcAddr, strings.TrimPrefix(o.in.metricsURL, "http://")} {
		if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
			c.Close()
			t.Errorf("stop: %s still accepts connections", addr)
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("stop: a connection to %s: %v, want refused", addr, err)
		}
	}
	<-o.in.exited // the first master, whichever upgrade it handed over in
	restart(t, o.in, o.bin)
}

// restart starts bin on in's config again once in's process has exited,
// and waits until it is ready.
func restart(t *testing.T, in *instance, bin string) {
	t.Helper()
	in.cmd = exec.Command(bin, "run", "-c", in.config)
	in.cmd.Stdout, in.cmd.Stderr = in.log.f, in.log.f
	in.exited = make(chan struct{})
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := in.exited
	go func() {
		in.err = in.cmd.Wait()
		close(exited)
	}()
	in.waitReady(90 * time.Second)
}

// statusAnswers: `supervisor status --json` answers from the serving
// master (the pid file's), ready, every worker ready.
func (o *opsRun) statusAnswers() error {
	out, err := o.in.cli("status", "--json")
	if err != nil {
		return fmt.Errorf("supervisor status: %v\n%s", err, out)
	}
	var st control.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return fmt.Errorf("supervisor status --json: %v\n%.300s", err, out)
	}
	if pid := o.in.servingPID(); st.PID != pid || !st.Ready || len(st.Workers) != 3 {
		return fmt.Errorf("supervisor status: master %d (pid file %d), ready %t, %d workers; want the pid file's, ready, 3 workers", st.PID, pid, st.Ready, len(st.Workers))
	}
	for _, w := range st.Workers {
		if w.State != "ready" {
			return fmt.Errorf("supervisor status: worker %s is %s, want ready", w.Name, w.State)
		}
	}
	return nil
}

// cacheHits sends the cached body: after an operation that kept the
// cache it is a hit at once; after a new master the first send is a miss
// and the second a hit. Hits are read from the model's statistics.
func (o *opsRun) cacheHits(state opsState) error {
	hits := func() (uint64, error) {
		var st struct {
			ModelStats []struct {
				InferenceStats struct {
					CacheHit struct{ Count uint64 } `json:"cache_hit"`
				} `json:"inference_stats"`
			} `json:"model_stats"`
		}
		code, b, _ := o.in.get("/v2/models/cached/stats")
		if code != http.StatusOK || json.Unmarshal(b, &st) != nil || len(st.ModelStats) != 1 {
			return 0, fmt.Errorf("GET /v2/models/cached/stats: %d %.200s", code, b)
		}
		return st.ModelStats[0].InferenceStats.CacheHit.Count, nil
	}
	if state == stateFresh {
		if err := freshPost(o.in.url+cachedPath, string(cachedBody), http.StatusOK); err != nil {
			return err
		}
	}
	before, err := hits()
	if err != nil {
		return err
	}
	if err := freshPost(o.in.url+cachedPath, string(cachedBody), http.StatusOK); err != nil {
		return err
	}
	after, err := hits()
	if err != nil {
		return err
	}
	if after != before+1 {
		return fmt.Errorf("cache hits went from %d to %d for a body sent before: want one more hit", before, after)
	}
	return nil
}

// poisonRefused sends the body that crashes infer-0: after an operation
// that kept the quarantine it is refused 422 at once, infer-0 untouched;
// after a new master the first send crashes infer-0 (502), which
// quarantines it (poison_threshold 1), and the next is refused 422.
func (o *opsRun) poisonRefused(state opsState) error {
	infer := func() (control.WorkerStatus, error) {
		for _, w := range o.in.status().Workers {
			if w.Name == "infer-0" {
				return w, nil
			}
		}
		return control.WorkerStatus{}, errors.New("no infer-0 in status")
	}
	if state == stateFresh {
		w, err := infer()
		if err != nil {
			return err
		}
		o.poisoned = true
		if err := freshPost(o.in.url+poisonPath, string(poisonBody), http.StatusBadGateway); err != nil {
			return fmt.Errorf("the poison body's first send to a new master: %w (want its crash)", err)
		}
		back := polltest.Wait(30*time.Second, 50*time.Millisecond, func() bool {
			nw, err := infer()
			return err == nil && nw.PID != 0 && nw.PID != w.PID && nw.State == "ready"
		})
		if !back {
			return fmt.Errorf("infer-0 (pid %d) did not serve again within 30s of the poison crash", w.PID)
		}
	}
	w, err := infer()
	if err != nil {
		return err
	}
	if err := freshPost(o.in.url+poisonPath, string(poisonBody), http.StatusUnprocessableEntity); err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	if nw, err := infer(); err != nil || nw.PID != w.PID {
		return fmt.Errorf("infer-0 went from pid %d to %d (%v): the refused body reached it", w.PID, nw.PID, err)
	}
	return nil
}

// TestLogErrorsScript runs scripts/log-errors on a fixture of real lines
// (master, prep and infer workers, a Go crash report): an error-level line
// an allow-list expects passes, one it does not fails (exit 1, the line
// printed), an allow-list entry without its reason is refused (exit 2),
// and the lists of scripts/log-errors.d/ (systemd-e2e's) are well formed.
func TestLogErrorsScript(t *testing.T) {
	const fixture = `{"level":"info","role":"master","pid":5470,"listen":"127.0.0.1:34091","message":"serving"}
{"level":"warn","role":"infer","worker":"infer-0","pid":22877,"generation":1,"message":"master is gone: draining and exiting"}
{"level":"error","role":"master","pid":5470,"worker":"infer-0","pid":5479,"exit":"exit status 2","message":"worker exited unexpectedly; restarting"}
SIGFPE: floating-point exception
{"level":"error","role":"master","pid":8087,"error":"accept tcp 127.0.0.1:8002: accept4: invalid argument","listen":"127.0.0.1:8002","message":"metrics listener failed; scrapes get no answer until a restart (or an upgrade)"}
`
	o := &opsRun{t: t}
	out, err := o.logErrors(fixture, append(append([]allowedLine(nil), poisonAllow...), killAllow...))
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "accept4: invalid argument") ||
		strings.Contains(out, "\nSIGFPE") || !strings.Contains(out, "allowed x1: ^SIGFPE") {
		t.Errorf("log-errors on the fixture: %v, want exit 1 printing the metrics listener's line alone:\n%s", err, out)
	}
	lines := strings.Split(fixture, "\n")
	if out, err := o.logErrors(strings.Join(append(lines[:4:4], ""), "\n"), poisonAllow); err != nil {
		t.Errorf("log-errors on the fixture's expected lines: %v, want exit 0:\n%s", err, out)
	}
	out, err = o.logErrors(lines[4], []allowedLine{{pattern: "metrics listener failed"}})
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, "has no reason") {
		t.Errorf("an allow-list entry without a reason: %v, want exit 2 saying so:\n%s", err, out)
	}
	lists, _ := filepath.Glob("../../scripts/log-errors.d/*")
	if len(lists) == 0 {
		t.Fatal("no allow-list in scripts/log-errors.d")
	}
	for _, list := range lists {
		if out, err := exec.Command("../../scripts/log-errors", "-a", list, "/dev/null").CombinedOutput(); err != nil {
			t.Errorf("allow-list %s: %v\n%s", list, err, out)
		}
	}
}
