package cudalib

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// stubLib compiles an empty shared library dir/name with soname name,
// linked against libs (names of stubs already in dir), so that its ELF
// header needs them as a real provider library needs CUDA's.
func stubLib(t *testing.T, dir, name string, libs ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed: it builds the stub libraries")
	}
	src := filepath.Join(t.TempDir(), "stub.c")
	if err := os.WriteFile(src, []byte("int stub_"+strings.NewReplacer(".", "_", "-", "_").Replace(name)+"(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	args := []string{"-shared", "-fPIC", "-o", out, "-Wl,-soname," + name, "-Wl,--no-as-needed", src, "-L" + dir}
	for _, l := range libs {
		args = append(args, "-l:"+l)
	}
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
	return out
}

// fakeProvider builds a stub libonnxruntime_providers_cuda.so in a new
// directory, needing libcublasLt.so.13 and libcudart.so.13 (stubs built
// beside it in another directory, then removed), and returns its path.
func fakeProvider(t *testing.T) string {
	t.Helper()
	cuda, ort := t.TempDir(), t.TempDir()
	stubLib(t, cuda, "libcublasLt.so.13")
	stubLib(t, cuda, "libcudart.so.13")
	p := stubLib(t, cuda, "libonnxruntime_providers_cuda.so", "libcublasLt.so.13", "libcudart.so.13")
	dst := filepath.Join(ort, filepath.Base(p))
	if err := os.Rename(p, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestNeeds: a provider library's needs are its ELF header's, in order,
// and cuDNN 9, which the CUDA provider opens at run time; a file that is
// not ELF is an error naming it.
func TestNeeds(t *testing.T) {
	p := fakeProvider(t)
	got, err := Needs(p)
	if err != nil {
		t.Fatal(err)
	}
	i, j := slices.Index(got, "libcublasLt.so.13"), slices.Index(got, "libcudart.so.13")
	if i < 0 || j < i || !slices.Contains(got, "libcudnn.so.9") {
		t.Errorf("Needs(%s) = %v; want libcublasLt.so.13, libcudart.so.13 in that order, and libcudnn.so.9", p, got)
	}
	bad := filepath.Join(t.TempDir(), "libonnxruntime_providers_cuda.so")
	if err := os.WriteFile(bad, []byte("not ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Needs(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Needs(not ELF) = %v; want an error naming %s", err, bad)
	}
}

// TestFindsWheelLibraries: on a host without CUDA (a fake root with none)
// the provider's libraries are missing, the first being libcublasLt.so.13,
// and the message lists the directories searched. Put a library of that
// name in a Python wheel's site-packages/nvidia/<pkg>/lib under the root
// and it is found there, and that directory is what the worker's
// LD_LIBRARY_PATH gets; so are the directories of cuda.library_dirs,
// $LD_LIBRARY_PATH, $CUDA_HOME and $VIRTUAL_ENV, in that order.
func TestFindsWheelLibraries(t *testing.T) {
	p := fakeProvider(t)
	root := t.TempDir()
	s := Search{Root: root, Getenv: env(nil)}
	r := s.ForLibrary(filepath.Join(filepath.Dir(p), "libonnxruntime.so.1"), "libonnxruntime_providers_cuda.so")
	if len(r.Missing) == 0 || r.Missing[0] != "libcublasLt.so.13" || r.LibraryPath() != "" {
		t.Fatalf("no CUDA anywhere: missing %v, library path %q; want libcublasLt.so.13 missing first, and no path", r.Missing, r.LibraryPath())
	}
	if msg := r.String(); !strings.Contains(msg, "missing libcublasLt.so.13 (CUDA 13: pip install") || !strings.Contains(msg, "searched: ") {
		t.Errorf("message %q; want it to name libcublasLt.so.13, where it comes from, and where it looked", msg)
	}

	wheel := filepath.Join(root, "usr/local/lib/python3.12/dist-packages/nvidia/cublas/lib")
	if err := os.MkdirAll(wheel, 0o755); err != nil {
		t.Fatal(err)
	}
	stubLib(t, wheel, "libcublasLt.so.13")
	r = s.ForLibrary(filepath.Join(filepath.Dir(p), "libonnxruntime.so.1"), "libonnxruntime_providers_cuda.so")
	if d, ok := r.Found["libcublasLt.so.13"]; !ok || d.Path != wheel || d.From != FromWheel || slices.Contains(r.Missing, "libcublasLt.so.13") {
		t.Errorf("with the wheel: found %v, missing %v; want libcublasLt.so.13 found in %s (%s)", r.Found, r.Missing, wheel, FromWheel)
	}
	if r.LibraryPath() != wheel || !strings.Contains(r.String(), "found libcublasLt.so.13 in "+wheel+" (python wheel)") {
		t.Errorf("library path %q, message %q; want %s", r.LibraryPath(), r.String(), wheel)
	}

	dirs := map[string]string{}
	for _, k := range []string{"configured", "ld", "cuda/lib64", "venv/lib/python3.11/site-packages/nvidia/cudnn/lib"} {
		dirs[k] = filepath.Join(t.TempDir(), k)
		if err := os.MkdirAll(dirs[k], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s = Search{Configured: []string{dirs["configured"]}, Root: root, Getenv: env(map[string]string{
		"LD_LIBRARY_PATH": dirs["ld"] + "::/nonexistent", "CUDA_HOME": filepath.Dir(dirs["cuda/lib64"]),
		"VIRTUAL_ENV": strings.TrimSuffix(dirs["venv/lib/python3.11/site-packages/nvidia/cudnn/lib"], "/lib/python3.11/site-packages/nvidia/cudnn/lib")})}
	var got []string
	for _, d := range s.Dirs() {
		if d.From != FromLoader {
			got = append(got, d.From+" "+d.Path)
		}
	}
	want := []string{FromConfig + " " + dirs["configured"], FromLDPath + " " + dirs["ld"], FromCUDA + " " + dirs["cuda/lib64"],
		FromWheel + " " + wheel, FromWheel + " " + dirs["venv/lib/python3.11/site-packages/nvidia/cudnn/lib"]}
	if !slices.Equal(got, want) {
		t.Errorf("Dirs() = %q; want %q", got, want)
	}
}

// TestLoaderDirs: /etc/ld.so.conf's directories and those of the files it
// includes come before the loader's defaults.
func TestLoaderDirs(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{"etc/ld.so.conf": "include /etc/ld.so.conf.d/*.conf\n# comment\n/opt/a\n",
		"etc/ld.so.conf.d/cuda.conf": "/usr/local/cuda-13.0/targets/x86_64-linux/lib  # CUDA\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := loaderDirs(root)
	want := []string{root + "/usr/local/cuda-13.0/targets/x86_64-linux/lib", root + "/opt/a", root + "/lib/x86_64-linux-gnu"}
	if len(got) < 3 || !slices.Equal(got[:3], want) {
		t.Errorf("loaderDirs = %q; want it to start %q", got, want)
	}
}
