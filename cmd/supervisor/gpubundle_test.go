package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGPUBundle: scripts/gpu-bundle (here with the CPU build of ONNX
// Runtime and 8 MiB parts, to exercise the split without the GPU build's
// 180 MB download) writes unpack and parts no larger than PART_SIZE;
// unpack refuses a damaged part, naming it; the unpacked tree runs, with
// no Go on PATH, gpu-check to its "no GPU found" line, its own jq, and
// bench-serve through the prebuilt raw benchmark, hey and genmodels.
func TestGPUBundle(t *testing.T) {
	if _, err := os.Stat("../../../shared/testdata/squeezenet/SqueezeNet_fp16.onnx"); err != nil {
		t.Skip("no ../shared/testdata next to the repository: the bundle carries its SqueezeNet")
	}
	needORT(t)
	const partSize = 8 << 20
	dir := t.TempDir()
	cmd := exec.Command("../../scripts/gpu-bundle", dir)
	cmd.Env = append(os.Environ(), "ORT_BUILD=cpu", "PART_SIZE=8M")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpu-bundle: %v\n%s", err, out)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "supervisor-gpu.tar.gz.part-*"))
	if len(parts) < 2 {
		t.Fatalf("parts %v; want the bundle split in at least two %d-byte parts", parts, partSize)
	}
	for _, p := range parts {
		if fi, err := os.Stat(p); err != nil || fi.Size() > partSize || fi.Size() > 60<<20 {
			t.Errorf("part %s: %v, %d bytes; want at most PART_SIZE (%d) and 60 MiB", p, err, fi.Size(), partSize)
		}
	}

	// A damaged copy of a part: unpack names it and extracts nothing.
	bad := t.TempDir()
	for _, f := range append(parts, filepath.Join(dir, "unpack")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, "part-01") {
			b[len(b)/2] ^= 1
		}
		if err := os.WriteFile(filepath.Join(bad, filepath.Base(f)), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	badDest := filepath.Join(t.TempDir(), "tree")
	out, err := exec.Command("sh", filepath.Join(bad, "unpack"), badDest).CombinedOutput()
	if _, serr := os.Stat(badDest); err == nil || !strings.Contains(string(out), "supervisor-gpu.tar.gz.part-01 has sha256") || serr == nil {
		t.Errorf("unpack with a damaged part: %v (tree: %v)\n%s\nwant it to refuse, naming part-01, before extracting", err, serr, out)
	}

	// The GPU host: no Go, only the system's directories on PATH.
	env := append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, fakeGPUEnv(t, 0)...)
	if out, err := runEnv(env, "", "sh", "-c", "command -v go"); err == nil {
		t.Skipf("go is on /usr/bin:/bin here (%s): cannot show that the tree runs without it", out)
	}
	dest := filepath.Join(t.TempDir(), "tree")
	if out, err := runEnv(env, "", "sh", filepath.Join(dir, "unpack"), dest); err != nil {
		t.Fatalf("unpack: %v\n%s", err, out)
	}
	out2, err := runEnv(env, dest, "scripts/gpu-check")
	lines := strings.Split(strings.TrimRight(out2, "\n"), "\n")
	if err != nil || !strings.HasPrefix(lines[len(lines)-1], "gpu-check: no GPU found") || !strings.Contains(out2, "== summary ==") {
		t.Errorf("gpu-check in the unpacked tree: %v\n%s\nwant a summary and the last line saying no GPU was found", err, out2)
	}
	// The bundled jq (with its libraries from lib/), for hosts without one.
	if out, err := runEnv(env, dest, "tools/jq", "-n", "1+1"); err != nil || strings.TrimSpace(out) != "2" {
		t.Errorf("the tree's tools/jq: %v, %q; want 2", err, out)
	}
	bench := append(env, "MODEL=mlp", "N=100", "CONC=1 8", "HANDOFFS=shm", "OUT="+filepath.Join(dest, "out"))
	if out, err := runEnv(bench, dest, "scripts/bench-serve"); err != nil || !strings.Contains(out, "raw in-process: ") ||
		!strings.Contains(out, "BenchmarkRaw/model=mlp/batch=32") {
		t.Errorf("bench-serve in the unpacked tree: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "out", "mlp-summary.txt")); err != nil || !strings.Contains(string(b), "on_c8=") {
		t.Errorf("bench-serve's summary: %q, %v; want on_c8 among its figures", b, err)
	}
}

// runEnv runs name with exactly env (nothing inherited) in dir ("" = here)
// and returns its combined output.
func runEnv(env []string, dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
