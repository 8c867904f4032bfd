// Package deploy_test checks the configs in deploy/ with the programs
// that will read them: HAProxy, nginx and Prometheus' promtool (Debian's,
// installed by scripts/setup-test-tools; the tests skip without them).
package deploy_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// need returns the path of a Debian program, skipping the test without it.
func need(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := "/usr/sbin/" + name; fileExists(p) {
		return p
	}
	t.Skipf("%s is not installed (scripts/setup-test-tools installs Debian's %s as root)", name, name)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(need(t, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func TestHAProxyConfigIsValid(t *testing.T) {
	run(t, "haproxy", "-c", "-f", "haproxy/haproxy.cfg")
}

// TestHAProxyRetriesOnlyWhatIsSafe: the health check is the ready route,
// and layer-7 retries are limited to connection failures and empty
// responses (never a timeout, a junk answer or a status), with the
// repository API excluded.
func TestHAProxyRetriesOnlyWhatIsSafe(t *testing.T) {
	lines := directives(t, "haproxy/haproxy.cfg")
	for _, want := range []string{
		"option httpchk GET /v2/health/ready", "http-check expect status 200", "balance leastconn",
		"http-reuse safe", "retries 2", "option redispatch 1", "retry-on conn-failure empty-response",
		"http-request disable-l7-retry if { path_beg /v2/repository }",
	} {
		if !lines[want] {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
}

// TestNginxSnippetIsValid checks the upstream example inside a minimal
// http {} with nginx -t.
func TestNginxSnippetIsValid(t *testing.T) {
	nginx := need(t, "nginx")
	dir := t.TempDir()
	snippet, err := filepath.Abs("nginx/supervisor.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	wrapper := fmt.Sprintf("pid %s/nginx.pid;\nerror_log stderr;\nevents {}\nhttp {\n  access_log off;\n  include %s;\n}\n", dir, snippet)
	if err := os.WriteFile(conf, []byte(wrapper), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-e", "stderr", "-c", conf).CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t on deploy/nginx/supervisor.conf: %v\n%s", err, out)
	}
	lines := directives(t, "nginx/supervisor.conf")
	for _, want := range []string{"least_conn;", "keepalive 64;", "proxy_next_upstream error timeout;", `proxy_set_header Connection "";`} {
		if !lines[want] {
			t.Errorf("supervisor.conf lacks %q", want)
		}
	}
}

// directives is the set of a config file's lines, trimmed, without
// comments.
func directives(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	set := map[string]bool{}
	for s := bufio.NewScanner(f); s.Scan(); {
		if line := strings.TrimSpace(s.Text()); line != "" && !strings.HasPrefix(line, "#") {
			set[line] = true
		}
	}
	return set
}

// TestPrometheusConfigAndRules: the scrape config and its alert rules
// load, and every alert fires on its unit test's series and not on the
// near miss beside it (prometheus/alerts_test.yml).
func TestPrometheusConfigAndRules(t *testing.T) {
	run(t, "promtool", "check", "config", "prometheus/prometheus.yml")
	run(t, "promtool", "test", "rules", "prometheus/alerts_test.yml")
}
