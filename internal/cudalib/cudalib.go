// Package cudalib finds the CUDA and cuDNN libraries that ONNX Runtime's
// GPU provider libraries load, where GPU hosts keep them: the loader's
// path, $CUDA_HOME, and the Python wheels PyTorch brings (nvidia-cublas,
// nvidia-cuda-runtime, nvidia-cudnn-cu13, … each a site-packages/nvidia/
// <pkg>/lib directory, which is on no loader path). What it finds, the
// master puts on an infer worker's LD_LIBRARY_PATH (WorkerEnv), and
// `supervisor check` prints it with every library still missing and the
// directories it searched (Resolve).
//
// It only reads the file system: the proof that the libraries load is
// ONNX Runtime loading them (ort.TryProvider).
package cudalib

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dir is a directory searched, and why it was.
type Dir struct {
	Path string
	From string // "cuda.library_dirs", "LD_LIBRARY_PATH", "CUDA_HOME", "python wheel", "loader"
}

// Where a directory came from; Loader's are searched by the dynamic
// loader anyway, so WorkerEnv leaves them out.
const (
	FromConfig  = "cuda.library_dirs"
	FromLDPath  = "LD_LIBRARY_PATH"
	FromCUDA    = "CUDA_HOME"
	FromWheel   = "python wheel"
	FromLoader  = "loader"
	wheelLibDir = "nvidia/*/lib"
)

// sitePackages are where Python keeps wheels, relative to a root: the
// system's and pip's (--user, /usr/local), conda's; each a glob.
var sitePackages = []string{
	"usr/lib/python3*/site-packages", "usr/lib/python3/dist-packages", "usr/lib/python3*/dist-packages",
	"usr/local/lib/python3*/site-packages", "usr/local/lib/python3*/dist-packages",
	"opt/conda/lib/python3*/site-packages",
}

// Search says where to look.
type Search struct {
	Configured []string            // cuda.library_dirs, searched first
	Root       string              // the file system's root: "/" (a test's fake one)
	Getenv     func(string) string // os.Getenv
}

// Dirs returns the directories to search, in order, each once:
// cuda.library_dirs, $LD_LIBRARY_PATH, $CUDA_HOME/lib64 and /lib, every
// site-packages/nvidia/*/lib (under Root, $VIRTUAL_ENV, $CONDA_PREFIX and
// $HOME/.local), then the loader's own (/etc/ld.so.conf and the default
// directories).
func (s Search) Dirs() []Dir {
	var dirs []Dir
	seen := map[string]bool{}
	add := func(from string, paths ...string) {
		for _, p := range paths {
			if p = filepath.Clean(p); p != "." && !seen[p] && isDir(p) {
				seen[p] = true
				dirs = append(dirs, Dir{p, from})
			}
		}
	}
	add(FromConfig, s.Configured...)
	add(FromLDPath, strings.Split(s.Getenv("LD_LIBRARY_PATH"), ":")...)
	if h := s.Getenv("CUDA_HOME"); h != "" {
		add(FromCUDA, filepath.Join(h, "lib64"), filepath.Join(h, "lib"))
	}
	var sites []string
	for _, g := range sitePackages {
		sites = append(sites, filepath.Join(s.Root, g))
	}
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := s.Getenv(env); p != "" {
			sites = append(sites, filepath.Join(p, "lib/python3*/site-packages"))
		}
	}
	if h := s.Getenv("HOME"); h != "" {
		sites = append(sites, filepath.Join(h, ".local/lib/python3*/site-packages"))
	}
	for _, site := range sites {
		m, _ := filepath.Glob(filepath.Join(site, wheelLibDir))
		slices.Sort(m)
		add(FromWheel, m...)
	}
	add(FromLoader, loaderDirs(s.Root)...)
	return dirs
}

// loaderDirs are the directories the dynamic loader searches after
// LD_LIBRARY_PATH: those /etc/ld.so.conf names (and its includes), then
// its defaults.
func loaderDirs(root string) []string {
	dirs := confDirs(root, filepath.Join(root, "etc/ld.so.conf"), 0)
	for _, d := range []string{"lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64", "usr/lib64", "lib", "usr/lib"} {
		dirs = append(dirs, filepath.Join(root, d))
	}
	return dirs
}

// confDirs reads an ld.so.conf file: a directory a line, "include GLOB",
// comments after #. depth bounds includes that include each other.
func confDirs(root, path string, depth int) []string {
	f, err := os.Open(path)
	if err != nil || depth > 8 {
		return nil
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case fields[0] == "include" && len(fields) == 2:
			g := fields[1]
			if !filepath.IsAbs(g) {
				g = filepath.Join(filepath.Dir(path), g)
			} else {
				g = filepath.Join(root, g)
			}
			m, _ := filepath.Glob(g)
			slices.Sort(m)
			for _, inc := range m {
				dirs = append(dirs, confDirs(root, inc, depth+1)...)
			}
		case filepath.IsAbs(fields[0]):
			dirs = append(dirs, filepath.Join(root, fields[0]))
		}
	}
	return dirs
}

// runtimeLoaded are libraries ONNX Runtime's CUDA provider opens only at
// run time (dlopen, not in its ELF NEEDED): cuDNN 9, without which
// convolutions fail.
var runtimeLoaded = map[string][]string{
	"libonnxruntime_providers_cuda.so": {"libcudnn.so.9"},
}

// Needs returns the libraries the provider library at path loads: those
// its ELF header names (DT_NEEDED) and those it opens at run time.
func Needs(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("could not read the libraries %s needs: %w", path, err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("could not read the libraries %s needs: %w", path, err)
	}
	for _, l := range runtimeLoaded[filepath.Base(path)] {
		if !slices.Contains(libs, l) {
			libs = append(libs, l)
		}
	}
	return libs, nil
}

// Providers are the provider libraries of ONNX Runtime's GPU build, which
// it loads from its own directory.
var Providers = []string{"libonnxruntime_providers_cuda.so", "libonnxruntime_providers_tensorrt.so"}

// ForLibrary resolves what the provider libraries named (Providers, or
// some) beside the ONNX Runtime library ortLib need; a provider library
// that is not there is itself Missing.
func (s Search) ForLibrary(ortLib string, providers ...string) Resolution {
	var libs []string
	var absent []string
	for _, p := range providers {
		needs, err := Needs(filepath.Join(filepath.Dir(ortLib), p))
		if err != nil {
			absent = append(absent, p)
			continue
		}
		for _, n := range needs {
			if !slices.Contains(libs, n) {
				libs = append(libs, n)
			}
		}
	}
	r := Resolve(libs, s.Dirs())
	r.Missing = append(absent, r.Missing...)
	return r
}

// System is the search of this host with the directories the config names.
func System(configured []string) Search {
	return Search{Configured: configured, Root: "/", Getenv: os.Getenv}
}

// Resolution is where each library was found, or not.
type Resolution struct {
	Found    map[string]Dir // library name → the first directory holding it
	Missing  []string       // in the order asked
	Searched []Dir
}

// Resolve looks for each library in dirs, in order.
func Resolve(libs []string, dirs []Dir) Resolution {
	r := Resolution{Found: map[string]Dir{}, Searched: dirs}
	for _, l := range libs {
		i := slices.IndexFunc(dirs, func(d Dir) bool { return exists(filepath.Join(d.Path, l)) })
		if i < 0 {
			r.Missing = append(r.Missing, l)
			continue
		}
		r.Found[l] = dirs[i]
	}
	return r
}

// LibraryPath is what an infer worker's LD_LIBRARY_PATH must hold for the
// loader to find what r found: the directories it found a library in,
// apart from the loader's own, in search order ("" when none).
func (r Resolution) LibraryPath() string {
	var out []string
	for _, d := range r.Searched {
		if d.From == FromLoader || slices.Contains(out, d.Path) {
			continue
		}
		for _, f := range r.Found {
			if f.Path == d.Path {
				out = append(out, d.Path)
				break
			}
		}
	}
	return strings.Join(out, ":")
}

// String says what was found where, what is missing and where it looked,
// one line each, for check and gpu-check.
func (r Resolution) String() string {
	var b strings.Builder
	var names []string
	for n := range r.Found {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if hint(n) == "" && r.Found[n].From == FromLoader {
			continue // the C library and its kin: always there
		}
		fmt.Fprintf(&b, "found %s in %s (%s)\n", n, r.Found[n].Path, r.Found[n].From)
	}
	for _, n := range r.Missing {
		fmt.Fprintf(&b, "missing %s%s\n", n, hint(n))
	}
	if len(r.Missing) > 0 {
		var where []string
		for _, d := range r.Searched {
			where = append(where, d.Path+" ("+d.From+")")
		}
		fmt.Fprintf(&b, "searched: %s\n", strings.Join(where, ", "))
	}
	return b.String()
}

// hint says where a missing library comes from.
func hint(lib string) string {
	switch {
	case strings.HasPrefix(lib, "libcuda.so"):
		return " (the NVIDIA driver's)"
	case strings.HasPrefix(lib, "libcudnn"):
		return " (cuDNN 9: pip install nvidia-cudnn-cu13, or the cudnn9-cuda-13 package)"
	case strings.HasPrefix(lib, "libnvinfer") || strings.HasPrefix(lib, "libnvonnxparser"):
		return " (TensorRT 10)"
	case strings.HasPrefix(lib, "libcu") || strings.HasPrefix(lib, "libnv"):
		return " (CUDA 13: pip install nvidia-cublas nvidia-cuda-runtime nvidia-curand, or the CUDA 13 toolkit)"
	case strings.HasPrefix(lib, "libonnxruntime_providers"):
		return " (the GPU build of ONNX Runtime: scripts/fetch-ort gpu)"
	}
	return ""
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
