package deb

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runPostrm runs packaging/deb/postrm ARG in a private mount namespace in
// which /var/lib is a scratch tmpfs holding state, the layout a purge
// finds: so the script's own absolute paths are what it touches, and
// nothing of the host's. deb-systemd-helper and deluser are stubbed (on
// PATH), the unit's enable state and the user being the host's. It
// returns the tree /var/lib/onnx-supervisor held afterwards, as paths.
func runPostrm(t *testing.T, arg string, state map[string]string) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (a mount namespace); make test runs as root in CI")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("unshare (util-linux) is not installed: %v", err)
	}
	stubs := t.TempDir()
	for _, s := range []string{"deb-systemd-helper", "deluser", "delgroup", "systemctl"} {
		if err := os.WriteFile(filepath.Join(stubs, s), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	postrm, err := filepath.Abs("postrm")
	if err != nil {
		t.Fatal(err)
	}
	var setup strings.Builder
	setup.WriteString("set -e; mount -t tmpfs tmpfs /var/lib; mkdir -p /var/lib/onnx-supervisor\n")
	for path, content := range state {
		full := filepath.Join("/var/lib/onnx-supervisor", path)
		setup.WriteString("mkdir -p '" + filepath.Dir(full) + "'; printf '%s' '" + content + "' >'" + full + "'\n")
	}
	setup.WriteString("sh '" + postrm + "' " + arg + "\n")
	setup.WriteString("cd /var/lib && find onnx-supervisor 2>/dev/null | sort\n")
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", setup.String())
	cmd.Env = append(os.Environ(), "PATH="+stubs+":"+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("postrm %s: %v\n%s", arg, err, stderrOf(err))
	}
	return strings.Fields(string(out))
}

// TestPostrmKeepsOperatorFiles: remove leaves the state directory as it
// was (docs/operations.md says so); purge deletes the service's own state (the
// TensorRT engine cache) and the directory once empty, never an operator's
// file in it (the old postrm ran rm -rf on the state and config
// directories, and dpkg deleted the models shipped under /var/lib).
func TestPostrmKeepsOperatorFiles(t *testing.T) {
	state := map[string]string{"trt-engines/model.engine": "engine", "models/mine.onnx": "operator model"}
	if got := runPostrm(t, "remove", state); strings.Join(got, " ") !=
		"onnx-supervisor onnx-supervisor/models onnx-supervisor/models/mine.onnx onnx-supervisor/trt-engines onnx-supervisor/trt-engines/model.engine" {
		t.Errorf("after remove, /var/lib holds %v; want the state directory untouched", got)
	}
	if got := runPostrm(t, "purge", state); strings.Join(got, " ") != "onnx-supervisor onnx-supervisor/models onnx-supervisor/models/mine.onnx" {
		t.Errorf("after purge, /var/lib holds %v; want the operator's model kept and the engine cache gone", got)
	}
	if got := runPostrm(t, "purge", map[string]string{"trt-engines/model.engine": "engine"}); len(got) != 0 {
		t.Errorf("after purge of a state directory holding only the service's state, /var/lib holds %v; want it gone", got)
	}
}

// TestPostrmRemovesNoDirectoryWholesale: the scripts never rm -rf a
// directory an operator writes to (/etc/onnx-supervisor, the state
// directory): dpkg removes the package's own files, and the conffile's
// directory once it is empty.
func TestPostrmRemovesNoDirectoryWholesale(t *testing.T) {
	for _, s := range []string{"postinst", "prerm", "postrm"} {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "#") || !strings.Contains(line, "rm -") {
				continue
			}
			if strings.Contains(line, "/etc") || strings.HasSuffix(line, `"$STATE"`) || strings.Contains(line, "/var/lib/onnx-supervisor ") {
				t.Errorf("%s:%d removes a directory an operator writes to: %s", s, i+1, line)
			}
		}
	}
}
