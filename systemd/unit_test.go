// Package systemd holds the unit file; its tests check the unit against
// what the master expects of systemd and, where systemd-analyze is
// installed, against systemd itself.
package systemd

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/unitstop"
)

// directives reads the [Service] section's key=value lines.
func directives(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("onnx-supervisor.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && section == "[Service]" && !strings.HasPrefix(line, "#") {
			d[k] = append(d[k], v)
		}
	}
	return d
}

func TestUnitMatchesTheMaster(t *testing.T) {
	d := directives(t)
	want := map[string]string{
		"Type":             "notify", // READY=1 once workers are ready
		"NotifyAccess":     "all",    // an upgraded master sends MAINPID=
		"KillMode":         "mixed",  // the master stops its own workers
		"Restart":          "on-failure",
		"RuntimeDirectory": "supervisor",
	}
	for k, v := range want {
		if got := d[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s=%v, want %s", k, got, v)
		}
	}
	for _, k := range []string{"WatchdogSec", "LimitNOFILE", "ExecStart", "ExecStop"} {
		if len(d[k]) == 0 {
			t.Errorf("%s is missing", k)
		}
	}
	if r := d["ExecReload"]; len(r) != 1 || !strings.Contains(r[0], "supervisor reload") {
		t.Errorf("ExecReload=%v, want `supervisor reload` (it waits for the outcome)", r)
	}
	// The stop bound must exceed the master's: drain_grace, then the
	// public listener and the workers, each bounded by shutdown_timeout.
	stop, err := time.ParseDuration(firstOr(d["TimeoutStopSec"], "0") + "s")
	if err != nil {
		t.Fatal(err)
	}
	if drain := config.DefaultConfig().StopBound(); stop < unitstop.Needed(drain) {
		t.Errorf("TimeoutStopSec=%s does not cover the default stop bound %s with margin (%s)", stop, drain, unitstop.Needed(drain))
	}
	if len(d["PrivateDevices"]) != 0 {
		t.Error("PrivateDevices= hides the GPUs from the infer workers")
	}
}

func firstOr(v []string, def string) string {
	if len(v) == 0 {
		return def
	}
	return v[0]
}

// TestConfigsNameTheTimeoutTheyNeed: a reference config whose stop bound
// the unit's TimeoutStopSec does not cover says so in a comment, with the
// TimeoutStopSec that `supervisor check` prints and the master's warning
// asks for, so operators copying it find the drop-in before the journal.
func TestConfigsNameTheTimeoutTheyNeed(t *testing.T) {
	unitStop, err := time.ParseDuration(firstOr(directives(t)["TimeoutStopSec"], "0") + "s")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no reference configs in ../configs (%v)", err)
	}
	named := regexp.MustCompile(`(?m)^#.*TimeoutStopSec=(\d+)`)
	for _, f := range files {
		cfg, err := config.LoadConfig(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		needed := fmt.Sprint(int64(unitstop.Needed(cfg.StopBound()) / time.Second))
		m := named.FindSubmatch(data)
		switch {
		case m != nil && string(m[1]) != needed:
			t.Errorf("%s: a comment says TimeoutStopSec=%s, but its stop bound %s needs %s", f, m[1], cfg.StopBound(), needed)
		case m == nil && unitstop.Compare(unitstop.Unit{TimeoutStop: unitStop}, cfg.StopBound()) != nil:
			t.Errorf("%s: its stop bound %s exceeds the unit's TimeoutStopSec=%s, and no comment names the TimeoutStopSec=%s it needs",
				f, cfg.StopBound(), unitStop, needed)
		}
	}
}

// TestUnitVerifies runs systemd-analyze verify with ExecStart pointing at
// a real binary (verify checks that it exists).
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd)")
	}
	bin := os.Getenv("SUPERVISOR_BIN")
	if bin == "" {
		t.Skip("SUPERVISOR_BIN is not set (make test sets it)")
	}
	unit, err := os.ReadFile("onnx-supervisor.service")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "onnx-supervisor.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/supervisor", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "onnx-supervisor.service") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
}

// TestMakeInstall installs into a scratch DESTDIR and checks that the
// installed binary finds the installed ONNX Runtime and config.
func TestMakeInstall(t *testing.T) {
	if os.Getenv("SUPERVISOR_BIN") == "" {
		t.Skip("SUPERVISOR_BIN is not set: run under `make test`, which has set up the tree")
	}
	dest := t.TempDir()
	cmd := exec.Command("make", "-C", "..", "install", "DESTDIR="+dest, "PREFIX=/opt/sv")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for _, f := range []string{"opt/sv/bin/supervisor", "opt/sv/lib/supervisor/libonnxruntime.so.1",
		"etc/systemd/system/onnx-supervisor.service", "etc/onnx-supervisor/supervisor.yaml", "var/lib/onnx-supervisor/models/default.onnx"} {
		if _, err := os.Stat(filepath.Join(dest, f)); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
	unit, _ := os.ReadFile(filepath.Join(dest, "etc/systemd/system/onnx-supervisor.service"))
	if !strings.Contains(string(unit), "ExecStart=/opt/sv/bin/supervisor run") {
		t.Error("the installed unit does not run the installed binary")
	}
	// The installed config drains as the package's does.
	installed, err := config.LoadConfig(filepath.Join(dest, "etc/onnx-supervisor/supervisor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := installed.DrainGrace.Duration, packagedConfig(t).DrainGrace.Duration; got != want {
		t.Errorf("make install's drain_grace is %s, the package's %s", got, want)
	}
	// The installed binary checks the installed config from its working
	// directory; it finds ONNX Runtime next to itself (lib/supervisor).
	check := exec.Command(filepath.Join(dest, "opt/sv/bin/supervisor"), "check", "-c", filepath.Join(dest, "etc/onnx-supervisor/supervisor.yaml"))
	check.Dir = filepath.Join(dest, "var/lib/onnx-supervisor")
	check.Env = append(os.Environ(), "ORT_LIBRARY=")
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("installed supervisor check: %v\n%s", err, out)
	}
}

// TestRestartOutlastsTheBalancersFall: the unit waits longer to restart a
// crashed master than the shipped HAProxy config takes to mark a host
// down (inter × fall), as docs/several-hosts.md advises: a host back sooner gets
// inference while it boots, answers 503, and HAProxy does not retry it.
func TestRestartOutlastsTheBalancersFall(t *testing.T) {
	restart, err := time.ParseDuration(firstOr(directives(t)["RestartSec"], "0") + "s")
	if err != nil {
		t.Fatal(err)
	}
	inter, fall := balancerChecks(t)
	if down := inter * time.Duration(fall); restart <= down {
		t.Errorf("RestartSec=%s is not above HAProxy's inter × fall = %s × %d = %s", restart, inter, fall, down)
	}
}

// balancerChecks reads inter and fall from deploy/haproxy's default-server
// line: HAProxy marks a host down after fall failed checks, inter apart.
func balancerChecks(t *testing.T) (inter time.Duration, fall int) {
	t.Helper()
	data, err := os.ReadFile("../deploy/haproxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*default-server\b.*\binter (\S+).*\bfall (\d+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("deploy/haproxy/haproxy.cfg has no default-server line with inter and fall")
	}
	inter, err = time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatalf("haproxy inter %q: %v", m[1], err)
	}
	fmt.Sscan(string(m[2]), &fall)
	return inter, fall
}

// packagedConfig is the Debian package's config (scripts/packaged-config),
// parsed with its workers' account blanked: the user onnx-supervisor is
// the package's, absent on a build host.
func packagedConfig(t *testing.T) *config.Config {
	t.Helper()
	out, err := exec.Command("../scripts/packaged-config").Output()
	if err != nil {
		t.Fatalf("scripts/packaged-config: %v", err)
	}
	account := regexp.MustCompile(`(?m)^  (user|group): onnx-supervisor\b.*$`)
	if n := len(account.FindAll(out, -1)); n != 2 {
		t.Fatalf("the packaged config has %d workers.user/group lines naming onnx-supervisor, want 2", n)
	}
	cfg, err := config.ParseConfig(account.ReplaceAll(out, []byte(`  $1: ""`)), "scripts/packaged-config")
	if err != nil {
		t.Fatalf("the packaged config does not parse: %v", err)
	}
	return cfg
}

// TestPackagedDrainSurvivesTheBalancer: the packaged config keeps serving
// with ready at 503 (drain_grace) longer than HAProxy's inter × fall, so
// that restart, stop and a package removal behind deploy/haproxy lose no
// request (with 0s a restart lost 69 of 1668: 503s while booting, before
// HAProxy marked the host down), and the unit's TimeoutStopSec is the one
// `supervisor check` asks for that config, so that systemd never kills the
// drain and the master does not warn about the unit it ships with.
func TestPackagedDrainSurvivesTheBalancer(t *testing.T) {
	cfg := packagedConfig(t)
	inter, fall := balancerChecks(t)
	if down := inter * time.Duration(fall); cfg.DrainGrace.Duration <= down {
		t.Errorf("the packaged drain_grace %s is not above HAProxy's inter × fall = %s × %d = %s",
			cfg.DrainGrace.Duration, inter, fall, down)
	}
	stop, err := time.ParseDuration(firstOr(directives(t)["TimeoutStopSec"], "0") + "s")
	if err != nil {
		t.Fatal(err)
	}
	if want := unitstop.Needed(cfg.StopBound()); stop != want {
		t.Errorf("TimeoutStopSec=%s, but `supervisor check` asks %s for the packaged config (stop bound %s)", stop, want, cfg.StopBound())
	}
	if w := unitstop.Compare(unitstop.Unit{Name: "onnx-supervisor.service", TimeoutStop: stop}, cfg.StopBound()); w != nil {
		t.Errorf("the master would warn under its own unit: %s", w)
	}
}
