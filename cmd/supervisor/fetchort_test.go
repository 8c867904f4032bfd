package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const ortGPUDir = "onnxruntime-linux-x64-gpu-1.24.1/lib/"

// fakeORTArchive writes a tgz laid out like the official GPU release
// archive, each library holding its own name, and returns its path and
// SHA-256. files are the names under lib/.
func fakeORTArchive(t *testing.T, files ...string) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		body := []byte("fake " + f)
		if err := tw.WriteHeader(&tar.Header{Name: ortGPUDir + f, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "onnxruntime-linux-x64-gpu-1.24.1.tgz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return path, hex.EncodeToString(sum[:])
}

// fetchORT runs scripts/fetch-ort with env added; it returns stderr and
// whether it succeeded.
func fetchORT(t *testing.T, env []string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command("../../scripts/fetch-ort", args...)
	cmd.Env = append(append(os.Environ(), "ORT_SHA256=", "ORT_ARCHIVE=", "ORT_URL="), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return stderr.String(), err == nil
}

// TestFetchORTGPUArchive: the GPU build installs from a local archive only
// when its SHA-256 matches the one the operator gave, and refuses, saying
// what to do, without one, with a wrong one, without the archive or a way
// to download it, and for an archive laid out otherwise.
func TestFetchORTGPUArchive(t *testing.T) {
	libs := []string{"libonnxruntime.so.1.24.1", "libonnxruntime_providers_shared.so",
		"libonnxruntime_providers_cuda.so", "libonnxruntime_providers_tensorrt.so"}
	archive, sum := fakeORTArchive(t, libs...)
	refusals := []struct {
		name string
		env  []string
		want string
	}{
		{"no hash", []string{"ORT_ARCHIVE=" + archive}, "none is pinned in this script"},
		{"wrong hash", []string{"ORT_ARCHIVE=" + archive, "ORT_SHA256=" + strings.Repeat("0", 64)}, "refusing to install it"},
		{"missing archive", []string{"ORT_ARCHIVE=" + archive + ".missing", "ORT_SHA256=" + sum}, "no such file"},
		{"no network", []string{"ORT_URL=http://127.0.0.1:1/ort.tgz", "ORT_SHA256=" + sum}, "could not download http://127.0.0.1:1/ort.tgz"},
	}
	for _, r := range refusals {
		dest := filepath.Join(t.TempDir(), "ort")
		out, ok := fetchORT(t, r.env, "gpu", dest)
		if ok || !strings.Contains(out, r.want) {
			t.Errorf("%s: fetch-ort gpu succeeded=%v, stderr %q; want a refusal saying %q", r.name, ok, out, r.want)
		}
		if _, err := os.Stat(filepath.Join(dest, "libonnxruntime.so.1")); err == nil {
			t.Errorf("%s: a library was installed despite the refusal", r.name)
		}
	}
	partial, partialSum := fakeORTArchive(t, libs[0])
	if out, ok := fetchORT(t, []string{"ORT_ARCHIVE=" + partial, "ORT_SHA256=" + partialSum}, "gpu", t.TempDir()); ok ||
		!strings.Contains(out, "lacks "+ortGPUDir+"libonnxruntime_providers_shared.so") {
		t.Errorf("archive without provider libraries: succeeded=%v, stderr %q; want it refused", ok, out)
	}

	dest := filepath.Join(t.TempDir(), "ort")
	if out, ok := fetchORT(t, []string{"ORT_ARCHIVE=" + archive, "ORT_SHA256=" + strings.ToUpper(sum)}, "gpu", dest); !ok {
		t.Fatalf("fetch-ort gpu with the right hash failed: %s", out)
	}
	for name, want := range map[string]string{"libonnxruntime.so.1": "fake libonnxruntime.so.1.24.1",
		"libonnxruntime_providers_cuda.so": "fake libonnxruntime_providers_cuda.so", "VERSION": "1.24.1 gpu\n"} {
		if b, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(b) != want {
			t.Errorf("%s after install = %q, %v; want %q", name, b, err, want)
		}
	}
	if out, ok := fetchORT(t, nil, "gpu", dest); !ok || out != "" {
		t.Errorf("second fetch-ort gpu: succeeded=%v, stderr %q; want a silent no-op", ok, out)
	}
}

// TestFetchORTGPUURL: without ORT_ARCHIVE the GPU build is downloaded
// from ORT_URL (here a local server) and installed only when its SHA-256
// is ORT_SHA256.
func TestFetchORTGPUURL(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (scripts/need-deb curl installs it)")
	}
	archive, sum := fakeORTArchive(t, "libonnxruntime.so.1.24.1", "libonnxruntime_providers_shared.so",
		"libonnxruntime_providers_cuda.so")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, archive)
	}))
	defer srv.Close()
	url := srv.URL + "/onnxruntime-linux-x64-gpu-1.24.1.tgz"
	bad := filepath.Join(t.TempDir(), "ort")
	if out, ok := fetchORT(t, []string{"ORT_URL=" + url, "ORT_SHA256=" + strings.Repeat("a", 64)}, "gpu", bad); ok ||
		!strings.Contains(out, "refusing to install it") {
		t.Errorf("download with a wrong hash: succeeded=%v, stderr %q; want a refusal", ok, out)
	}
	if _, err := os.Stat(filepath.Join(bad, "libonnxruntime.so.1")); err == nil {
		t.Error("a downloaded archive with the wrong hash was installed")
	}
	dest := filepath.Join(t.TempDir(), "ort")
	out, ok := fetchORT(t, []string{"ORT_URL=" + url, "ORT_SHA256=" + sum}, "gpu", dest)
	if !ok || !strings.Contains(out, "downloading "+url) || !strings.Contains(out, "(SHA-256 "+sum+")") {
		t.Errorf("download with the right hash: succeeded=%v, stderr %q; want it downloaded, verified and installed", ok, out)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "libonnxruntime_providers_cuda.so")); err != nil || string(b) != "fake libonnxruntime_providers_cuda.so" {
		t.Errorf("CUDA provider library after the download = %q, %v", b, err)
	}
}

// TestFetchORTAuto: on a host where NVML sees no GPU (a fake NVML with
// none, so that the test runs on GPU hosts too), auto keeps the CPU build
// and says so.
func TestFetchORTAuto(t *testing.T) {
	dest := t.TempDir() // an installed CPU build, so that nothing is fetched
	for name, body := range map[string]string{"libonnxruntime.so.1": "cpu", "VERSION": "1.24.1\n"} {
		if err := os.WriteFile(filepath.Join(dest, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, ok := fetchORT(t, append(fakeGPUEnv(t, 0), "SUPERVISOR_BIN="+binPath), "auto", dest)
	if !ok || !strings.Contains(out, "NVML sees no GPU: using the CPU build") {
		t.Errorf("fetch-ort auto on a host without GPUs: succeeded=%v, stderr %q; want the CPU build, said", ok, out)
	}
}

// TestFetchORTAutoGPUWithoutHash: where NVML sees a GPU but no ORT_SHA256
// is given, auto installs (here: keeps) the CPU build and says how to get
// the GPU one, so `make run` still serves on a fresh GPU host. The GPU is
// a fake `supervisor gpus` that prints one.
func TestFetchORTAutoGPUWithoutHash(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "supervisor")
	script := "#!/bin/sh\necho 'driver 550.54.15, CUDA 12.4'\necho 'GPU 0 GPU-0000 NVIDIA H100'\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	for name, body := range map[string]string{"libonnxruntime.so.1": "cpu", "VERSION": "1.24.1\n"} {
		if err := os.WriteFile(filepath.Join(dest, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, ok := fetchORT(t, []string{"SUPERVISOR_BIN=" + fake}, "auto", dest)
	if !ok || !strings.Contains(out, "ORT_SHA256 is not set") || !strings.Contains(out, "using the CPU build") {
		t.Errorf("fetch-ort auto with a GPU and no ORT_SHA256: succeeded=%v, stderr %q; want the CPU build and how to get the GPU one", ok, out)
	}
}

// TestMakeSetupFetchesAuto: `make setup` runs fetch-ort auto (the GPU
// build where NVML sees a GPU, see TestFetchORTAutoGPU), and ORT_BUILD
// overrides it. It is a dry run of a copy of the Makefile in a temporary
// directory, so nothing is fetched or generated.
func TestMakeSetupFetchesAuto(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dir := t.TempDir()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), mk, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "fetch-ort"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for build, want := range map[string]string{"": "scripts/fetch-ort auto third_party/onnxruntime\n",
		"ORT_BUILD=cpu": "scripts/fetch-ort cpu third_party/onnxruntime\n"} {
		cmd := exec.Command("make", "-n", "-C", dir, "setup")
		for _, kv := range os.Environ() { // the default, not this shell's ORT_BUILD
			if !strings.HasPrefix(kv, "ORT_BUILD=") && !strings.HasPrefix(kv, "MAKEFLAGS=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		if build != "" {
			cmd.Args = append(cmd.Args, build)
		}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("make -n setup %s: %v\n%s\nwant it to run %q", build, err, out, want)
		}
	}
}
