package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The npm packages scripts/fetch-ort installs from, and where in them the
// libraries are.
const (
	ortCorePkg = "com.github.asus4.onnxruntime"
	ortGPUPkg  = "com.github.asus4.onnxruntime.linux-x64-gpu"
	ortPkgDir  = "package/Plugins/Linux/x64/"
)

// fakeORTTarball writes DIR/<pkg>-0.4.9.tgz laid out like the npm package,
// each library holding its own name, and returns its sha512 as npm's
// integrity spells it (base64). files are the names under ortPkgDir.
func fakeORTTarball(t *testing.T, dir, pkg string, files ...string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range append([]string{"package.json"}, files...) {
		name, body := ortPkgDir+f, []byte("fake "+f)
		if f == "package.json" {
			name = "package/package.json"
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
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
	if err := os.WriteFile(filepath.Join(dir, pkg+"-0.4.9.tgz"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(buf.Bytes())
	return base64.StdEncoding.EncodeToString(sum[:])
}

// fakeORTTarballs writes both packages, complete, into a new directory;
// it returns it and their sha512s as ORT_CORE_SHA512 and ORT_GPU_SHA512.
func fakeORTTarballs(t *testing.T) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	core := fakeORTTarball(t, dir, ortCorePkg, "libonnxruntime.so", "libonnxruntime_providers_shared.so")
	gpu := fakeORTTarball(t, dir, ortGPUPkg, "libonnxruntime_providers_shared.so",
		"libonnxruntime_providers_cuda.so", "libonnxruntime_providers_tensorrt.so")
	return dir, []string{"ORT_CORE_SHA512=" + core, "ORT_GPU_SHA512=" + gpu}
}

// fetchORT runs scripts/fetch-ort with env added; it returns stderr and
// whether it succeeded.
func fetchORT(t *testing.T, env []string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command("../../scripts/fetch-ort", args...)
	cmd.Env = append(append(os.Environ(), "ORT_TARBALLS=", "ORT_REGISTRY=", "ORT_CORE_SHA512=", "ORT_GPU_SHA512="), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return stderr.String(), err == nil
}

// TestFetchORTGPUArchive: the GPU build installs from local tarballs
// (ORT_TARBALLS, a host without internet) only when each one's sha512 is
// the pinned one, and refuses, naming the file, with the pins of the
// real packages (these are fakes), with a tarball missing, or one that
// lacks a provider library. Installed: the core library as
// libonnxruntime.so.1 and the GPU package's three provider libraries
// beside it; a second run is a silent no-op, and the CPU build then
// removes the provider libraries.
func TestFetchORTGPUArchive(t *testing.T) {
	dir, sums := fakeORTTarballs(t)
	refusals := []struct {
		name string
		env  []string
		want string
	}{
		{"pinned hashes", []string{"ORT_TARBALLS=" + dir}, "not the pinned sha512-BkzxduSZ9IkeDP6Q8lz2TFU2ie7hSSvS7ZIfzMooExoq0CNzJnuuGaUJ7IsojBgqO4ouD1jXah8OYyJbCN29Fg== of " + ortCorePkg + "@0.4.9: refusing to install it"},
		{"pinned GPU hash", []string{"ORT_TARBALLS=" + dir, sums[0]}, "not the pinned sha512-FopIhNE/Ng+v2X65wVc9clPCBCvhvA53Hxo2U0Kf5fGdVsC7iCA+mZ0KLWggcQAj7TIZ6pNidR4AC10g74Xo6w== of " + ortGPUPkg + "@0.4.9"},
		{"missing tarball", append([]string{"ORT_TARBALLS=" + t.TempDir()}, sums...), "has no " + ortCorePkg + "-0.4.9.tgz (on a host with internet: npm pack"},
		{"no network", append([]string{"ORT_REGISTRY=http://127.0.0.1:1"}, sums...), "could not download http://127.0.0.1:1/" + ortCorePkg + "/-/" + ortCorePkg + "-0.4.9.tgz"},
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
	partial := t.TempDir()
	partialSums := []string{"ORT_CORE_SHA512=" + fakeORTTarball(t, partial, ortCorePkg, "libonnxruntime.so"),
		"ORT_GPU_SHA512=" + fakeORTTarball(t, partial, ortGPUPkg, "libonnxruntime_providers_shared.so")}
	if out, ok := fetchORT(t, append([]string{"ORT_TARBALLS=" + partial}, partialSums...), "gpu", t.TempDir()); ok ||
		!strings.Contains(out, "lacks "+ortPkgDir+"libonnxruntime_providers_cuda.so") {
		t.Errorf("GPU package without the CUDA provider library: succeeded=%v, stderr %q; want it refused", ok, out)
	}

	dest := filepath.Join(t.TempDir(), "ort")
	if out, ok := fetchORT(t, append([]string{"ORT_TARBALLS=" + dir}, sums...), "gpu", dest); !ok ||
		!strings.Contains(out, "verified "+ortGPUPkg+"-0.4.9.tgz (sha512-") {
		t.Fatalf("fetch-ort gpu with matching hashes: succeeded=%v, stderr %q", ok, out)
	}
	for name, want := range map[string]string{"libonnxruntime.so.1": "fake libonnxruntime.so",
		"libonnxruntime_providers_shared.so":   "fake libonnxruntime_providers_shared.so",
		"libonnxruntime_providers_cuda.so":     "fake libonnxruntime_providers_cuda.so",
		"libonnxruntime_providers_tensorrt.so": "fake libonnxruntime_providers_tensorrt.so", "VERSION": "1.29.0 gpu\n"} {
		if b, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(b) != want {
			t.Errorf("%s after install = %q, %v; want %q", name, b, err, want)
		}
	}
	if out, ok := fetchORT(t, nil, "gpu", dest); !ok || out != "" {
		t.Errorf("second fetch-ort gpu: succeeded=%v, stderr %q; want a silent no-op", ok, out)
	}
	if out, ok := fetchORT(t, append([]string{"ORT_TARBALLS=" + dir}, sums...), "cpu", dest); !ok {
		t.Fatalf("fetch-ort cpu over the GPU build: %s", out)
	}
	if m, _ := filepath.Glob(filepath.Join(dest, "libonnxruntime_providers_*.so")); len(m) != 0 {
		t.Errorf("the CPU build left the GPU build's provider libraries: %v", m)
	}
}

// TestFetchORTGPUURL: without ORT_TARBALLS both packages are downloaded
// from the registry (here a local server answering npm's tarball paths)
// and installed only when their sha512s are the pinned ones.
func TestFetchORTGPUURL(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (scripts/need-deb curl installs it)")
	}
	dir, sums := fakeORTTarballs(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pkg, file, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/-/")
		if !ok || !strings.HasPrefix(file, pkg+"-") {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join(dir, file))
	}))
	defer srv.Close()
	bad := filepath.Join(t.TempDir(), "ort")
	if out, ok := fetchORT(t, []string{"ORT_REGISTRY=" + srv.URL, sums[0]}, "gpu", bad); ok ||
		!strings.Contains(out, "refusing to install it") {
		t.Errorf("download of a GPU package that is not the pinned one: succeeded=%v, stderr %q; want a refusal", ok, out)
	}
	if _, err := os.Stat(filepath.Join(bad, "libonnxruntime.so.1")); err == nil {
		t.Error("a download with the wrong hash was installed")
	}
	dest := filepath.Join(t.TempDir(), "ort")
	url := srv.URL + "/" + ortGPUPkg + "/-/" + ortGPUPkg + "-0.4.9.tgz"
	out, ok := fetchORT(t, append([]string{"ORT_REGISTRY=" + srv.URL}, sums...), "gpu", dest)
	if !ok || !strings.Contains(out, "downloading "+url) || !strings.Contains(out, "(sha512-"+strings.TrimPrefix(sums[1], "ORT_GPU_SHA512=")+")") {
		t.Errorf("download with matching hashes: succeeded=%v, stderr %q; want it downloaded, verified and installed", ok, out)
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
	for name, body := range map[string]string{"libonnxruntime.so.1": "cpu", "VERSION": "1.29.0\n"} {
		if err := os.WriteFile(filepath.Join(dest, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, ok := fetchORT(t, append(fakeGPUEnv(t, 0), "SUPERVISOR_BIN="+binPath), "auto", dest)
	if !ok || !strings.Contains(out, "NVML sees no GPU: using the CPU build") {
		t.Errorf("fetch-ort auto on a host without GPUs: succeeded=%v, stderr %q; want the CPU build, said", ok, out)
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
