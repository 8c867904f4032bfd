package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestCheckWarnsOfALowFileLimit: under an open-file limit of 512 (ulimit
// -n, soft and hard, so Go cannot raise it), `supervisor check` warns that
// the default connection limits need more, with the numbers and the
// unit's LimitNOFILE= fix; it warns only, the rest of check still runs.
func TestCheckWarnsOfALowFileLimit(t *testing.T) {
	inferCPU, prepCPU := twoCPUs(t)
	conf := filepath.Join(t.TempDir(), "c.yaml")
	body := fmt.Sprintf("infer:\n  cpus: %q\nprep:\n  workers: 1\n  cpus: %q\nplacement:\n  master_cpus: none\n", inferCPU, prepCPU)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("sh", "-c", `ulimit -n 512 && exec "$0" check -c "$1"`, binPath, conf).Output() // models/ may be missing: only stdout matters
	warning := regexp.MustCompile(`(?m)^# WARNING: the open-file limit \(RLIMIT_NOFILE\) is 512, below the (\d+) descriptors .*limits.max_connections 10000 .*LimitNOFILE=(\d+) or more in the unit`)
	m := warning.FindSubmatch(out)
	if m == nil || string(m[1]) != string(m[2]) {
		t.Fatalf("check under ulimit -n 512 lacks the warning with its need and fix:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^#   prep-0 `).Match(out) {
		t.Errorf("check stopped at the warning: no placement in\n%s", out)
	}
}
