package deb

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// The names this package uses. Debian's supervisord is the package
// supervisor, with the unit supervisor.service and /etc/supervisor/; none
// of those may be ours (scripts/archive-names checks every path against
// the archive's Contents index). The command stays supervisor.
const (
	pkg  = "onnx-supervisor"
	unit = "onnx-supervisor.service"
)

// built is a package built by scripts/build-deb, with its control files
// (dpkg-deb -e) and its tree (dpkg-deb -x) extracted.
type built struct {
	deb, control, tree string
}

// buildPackage runs scripts/build-deb into a temporary directory.
func buildPackage(t *testing.T) built {
	t.Helper()
	for _, tool := range []string{"dpkg-deb", "dpkg-shlibdeps", "go", "help2man", "objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian packages dpkg, dpkg-dev, help2man, binutils; make test installs them): %v", tool, err)
		}
	}
	for _, f := range []string{"third_party/onnxruntime/libonnxruntime.so.1", "models/default.onnx"} {
		if _, err := os.Stat(filepath.Join("..", "..", f)); err != nil {
			t.Skipf("%s is missing: run `make setup` (make test does): %v", f, err)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command("../../scripts/build-deb")
	cmd.Env = append(os.Environ(), "OUT="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/build-deb: %v\n%s", err, stderrOf(err))
	}
	b := built{deb: strings.TrimSpace(string(out)), control: filepath.Join(dir, "control"), tree: filepath.Join(dir, "tree")}
	run(t, "dpkg-deb", "-e", b.deb, b.control)
	run(t, "dpkg-deb", "-x", b.deb, b.tree)
	return b
}

func stderrOf(err error) []byte {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderrOf(err))
	}
	return string(out)
}

func (b built) field(t *testing.T, name string) string {
	t.Helper()
	return strings.TrimSpace(run(t, "dpkg-deb", "-f", b.deb, name))
}

func TestPackage(t *testing.T) {
	b := buildPackage(t)
	t.Run("version", func(t *testing.T) { checkVersion(t, b) })
	t.Run("depends", func(t *testing.T) { checkDepends(t, b) })
	t.Run("contents", func(t *testing.T) { checkContents(t, b) })
	t.Run("conffiles", func(t *testing.T) { checkConffiles(t, b) })
	t.Run("scripts", func(t *testing.T) { checkScripts(t, b) })
	t.Run("config", func(t *testing.T) { checkConfig(t, b) })
	t.Run("debian", func(t *testing.T) { checkDebian(t, b) })
}

// checkVersion: the version comes from git, names the commit, and is the
// one the binary reports.
func checkVersion(t *testing.T, b built) {
	v := b.field(t, "Version")
	if !regexp.MustCompile(`^[0-9][A-Za-z0-9.+~]*-[A-Za-z0-9.+~]+$`).MatchString(v) {
		t.Errorf("Version %q is not <upstream>-<revision> (without a revision lintian wants changelog.gz, not changelog.Debian.gz)", v)
	}
	if out, err := exec.Command("git", "rev-parse", "--short=7", "HEAD").Output(); err == nil {
		if hash := strings.TrimSpace(string(out)); !strings.Contains(v, hash) {
			t.Errorf("Version %q does not name commit %s", v, hash)
		}
	}
	if !strings.HasSuffix(b.deb, "/"+pkg+"_"+v+"_amd64.deb") {
		t.Errorf("package file %q does not carry version %q", b.deb, v)
	}
	if got := run(t, filepath.Join(b.tree, "usr/bin/supervisor"), "version"); !strings.Contains(got, v) {
		t.Errorf("supervisor version = %q, want %q", got, v)
	}
}

// checkDepends: every library the binary and ONNX Runtime link (their ELF
// NEEDED entries) belongs, on this host, to a package in Depends, so that
// apt brings it to a host that lacks it.
func checkDepends(t *testing.T, b built) {
	depends := map[string]bool{}
	for _, d := range strings.Split(b.field(t, "Depends"), ",") {
		if f := strings.Fields(d); len(f) > 0 {
			depends[strings.TrimSuffix(f[0], ":any")] = true
		}
	}
	for _, bin := range []string{"usr/bin/supervisor", "usr/lib/supervisor/libonnxruntime.so.1"} {
		for _, lib := range needed(t, filepath.Join(b.tree, bin)) {
			pkgs := owners(t, lib)
			found := false
			for _, p := range pkgs {
				found = found || depends[p]
			}
			if !found {
				t.Errorf("%s links %s (package %v on this host), which Depends %v lacks", bin, lib, pkgs, depends)
			}
		}
	}
	if !depends["adduser"] {
		t.Error("Depends lacks adduser, which postinst runs")
	}
}

// needed reads an ELF file's NEEDED entries.
func needed(t *testing.T, path string) []string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil || len(libs) == 0 {
		t.Fatalf("%s: NEEDED entries %v: %v", path, libs, err)
	}
	return libs
}

// owners asks dpkg which installed packages hold a library's file.
func owners(t *testing.T, soname string) []string {
	t.Helper()
	out, err := exec.Command("dpkg", "-S", "*/"+soname).Output()
	if err != nil {
		t.Fatalf("dpkg -S */%s: no installed package holds it (the build host must have it to link): %v", soname, err)
	}
	var pkgs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		names, _, ok := strings.Cut(sc.Text(), ": ")
		if !ok || strings.HasPrefix(names, "diversion") {
			continue
		}
		for _, n := range strings.Split(names, ", ") {
			pkgs = append(pkgs, strings.SplitN(n, ":", 2)[0])
		}
	}
	return pkgs
}

// checkContents: the paths of a distribution package, the unit running the
// packaged binary, and nothing under /usr/local.
func checkContents(t *testing.T, b built) {
	for _, f := range []string{"usr/bin/supervisor", "usr/lib/supervisor/libonnxruntime.so.1",
		"lib/systemd/system/" + unit, "etc/onnx-supervisor/supervisor.yaml",
		"usr/share/onnx-supervisor/models/default.onnx", "usr/share/man/man8/supervisor.8.gz",
		"usr/share/doc/onnx-supervisor/copyright", "usr/share/doc/onnx-supervisor/changelog.Debian.gz"} {
		if _, err := os.Stat(filepath.Join(b.tree, f)); err != nil {
			t.Errorf("not in the package: %v", err)
		}
	}
	if list := run(t, "dpkg-deb", "-c", b.deb); strings.Contains(list, "usr/local") {
		t.Errorf("the package installs under /usr/local:\n%s", list)
	}
	if list := run(t, "dpkg-deb", "-c", b.deb); strings.Contains(list, " ./var/") {
		t.Errorf("the package ships files under /var, which dpkg deletes on remove (the state directory is systemd's):\n%s", list)
	}
	unit, err := os.ReadFile(filepath.Join(b.tree, "lib/systemd/system/"+unit))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ExecStart", "ExecReload", "ExecStop"} {
		if !regexp.MustCompile(`(?m)^` + k + `=/usr/bin/supervisor `).Match(unit) {
			t.Errorf("the packaged unit's %s= does not run /usr/bin/supervisor", k)
		}
	}
}

func checkConffiles(t *testing.T, b built) {
	data, err := os.ReadFile(filepath.Join(b.control, "conffiles"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(data)); len(got) != 1 || got[0] != "/etc/onnx-supervisor/supervisor.yaml" {
		t.Errorf("conffiles = %q, want /etc/onnx-supervisor/supervisor.yaml", got)
	}
}

// checkScripts: the maintainer scripts parse under sh (dash runs them),
// and upgrade hands over instead of stopping.
func checkScripts(t *testing.T, b built) {
	for _, s := range []string{"postinst", "prerm", "postrm"} {
		p := filepath.Join(b.control, s)
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s: missing or not executable: %v", s, err)
			continue
		}
		if out, err := exec.Command("sh", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("sh -n %s: %v\n%s", s, err, out)
		}
	}
	postinst, _ := os.ReadFile(filepath.Join(b.control, "postinst"))
	for _, want := range []string{"supervisor upgrade -c \"$CONFIG\"", "adduser --system --group"} {
		if !strings.Contains(string(postinst), want) {
			t.Errorf("postinst lacks %q", want)
		}
	}
}

// checkConfig: the packaged config parses strictly, finds the packaged ONNX
// Runtime and models by absolute path, and runs the workers as the user
// postinst creates. On a host without that user, that is the only error.
func checkConfig(t *testing.T, b built) {
	path := filepath.Join(b.tree, "etc/onnx-supervisor/supervisor.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.ParseConfig(data, path)
	if err != nil {
		cfg = parseWithoutAccount(t, data, path, err)
	} else if cfg.Workers.User != pkg || cfg.Workers.Group != pkg {
		t.Errorf("workers.user/group = %q/%q, want %s (postinst creates it)", cfg.Workers.User, cfg.Workers.Group, pkg)
	}
	if cfg.ONNXRuntimeLibrary != "/usr/lib/supervisor/libonnxruntime.so.1" {
		t.Errorf("onnxruntime_library = %q, want the packaged /usr/lib/supervisor/libonnxruntime.so.1", cfg.ONNXRuntimeLibrary)
	}
	for _, m := range cfg.Models {
		if _, err := os.Stat(filepath.Join(b.tree, m.Path)); !filepath.IsAbs(m.Path) || err != nil {
			t.Errorf("model %s: path %q is not an absolute path in the package: %v", m.Name, m.Path, err)
		}
	}
}

// parseWithoutAccount accepts err only if it is about the workers' account
// (absent on a build host) and that account is onnx-supervisor, and parses the
// config with that account blank.
func parseWithoutAccount(t *testing.T, data []byte, path string, err error) *config.Config {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var ce *config.ConfigError
		if !errors.As(e, &ce) || !strings.HasPrefix(ce.Field, "workers.") {
			t.Fatalf("the packaged config does not parse: %v", err)
		}
	}
	account := regexp.MustCompile(`(?m)^  (user|group): onnx-supervisor\b.*$`)
	if n := len(account.FindAll(data, -1)); n != 2 {
		t.Fatalf("the packaged config has %d workers.user/group lines naming onnx-supervisor, want 2: %v", n, err)
	}
	blank := account.ReplaceAll(data, []byte(`  $1: ""`))
	cfg, err := config.ParseConfig(blank, path)
	if err != nil {
		t.Fatalf("the packaged config does not parse: %v", err)
	}
	return cfg
}
