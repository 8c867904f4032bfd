package workers

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestEngineCacheForUnprivilegedWorkers: in a state directory that is
// root's and 0755 (as /var/lib/onnx-supervisor is under the systemd unit), a
// worker running as workers.user cannot make its TensorRT engine cache
// directory. With workers.user set, the master makes it, and its missing
// parents, 0750 and the workers', for each model a GPU worker runs with
// TensorRT on (an existing one is given to them too), and the workers'
// user can then write engines there. CPU workers' and TensorRT-off models'
// directories are not made, nor anything without workers.user; one that
// cannot be made is logged with what to change.
func TestEngineCacheForUnprivilegedWorkers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only a root master gives directories to the workers' user")
	}
	state := t.TempDir()
	for _, d := range []string{filepath.Dir(state), state} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	nobody := &Credentials{uid: 65534, gid: 65534}
	if out, err := runAs(nobody, "mkdir", filepath.Join(state, "trt-engines")); err == nil {
		t.Fatalf("a worker as uid 65534 made a directory in root's 0755 state directory (%s): the test proves nothing", out)
	}
	at := func(name string) string { return filepath.Join(state, name) }
	if err := os.Mkdir(at("existing"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(at("file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	trt := func(on bool, dir string) *ort.GPUOptions {
		return &ort.GPUOptions{TensorRT: ort.TensorRTOptions{Enable: on, EngineCacheDir: dir}}
	}
	gpu := worker.Spec{Provider: worker.ProviderCUDA, Models: []worker.Model{
		{Name: "a", GPU: trt(true, at("trt/engines"))}, {Name: "b", GPU: trt(true, at("existing"))},
		{Name: "off", GPU: trt(false, at("off"))}, {Name: "no cache", GPU: trt(true, "")}, {Name: "plain"},
		{Name: "bad", GPU: trt(true, at("file/engines"))}}}
	cpu := worker.Spec{Provider: worker.ProviderCPU, Models: []worker.Model{{Name: "a", GPU: trt(true, at("cpu"))}}}
	var logs bytes.Buffer
	MakeEngineCaches([]worker.Spec{gpu, cpu, gpu}, nobody, zerolog.New(&logs))
	for _, d := range []string{"trt", "trt/engines", "existing"} {
		fi, err := os.Stat(at(d))
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if !fi.IsDir() || fi.Mode().Perm() != 0o750 || st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("%s: %v owned by %d:%d, want a directory 0750 owned by 65534:65534", d, fi.Mode(), st.Uid, st.Gid)
		}
	}
	if out, err := runAs(nobody, "touch", at("trt/engines/model.engine")); err != nil {
		t.Errorf("the workers' user cannot write an engine in the cache the master made: %v %s", err, out)
	}
	MakeEngineCaches([]worker.Spec{{Provider: worker.ProviderCUDA, Models: []worker.Model{{Name: "a", GPU: trt(true, at("root"))}}}},
		nil, zerolog.Nop())
	for _, d := range []string{"off", "cpu", "root"} {
		if _, err := os.Stat(at(d)); !os.IsNotExist(err) {
			t.Errorf("%s: %v; want it not made", d, err)
		}
	}
	if l := logs.String(); strings.Count(l, `"level":"error"`) != 1 || !strings.Contains(l, `"model":"bad"`) ||
		!strings.Contains(l, "is not a directory") || !strings.Contains(l, "engine_cache_dir") {
		t.Errorf("log %q; want one error for model bad, saying why and naming engine_cache_dir", l)
	}
}

// runAs runs a command as c's user and group.
func runAs(c *Credentials, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.credential()}
	return cmd.CombinedOutput()
}
