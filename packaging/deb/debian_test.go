package deb

import (
	"compress/gzip"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// checkDebian is what lintian and the archive ask of the package (a
// subtest group of TestPackage, which builds it once): names of our own,
// relations that reach only our old package, a stripped PIE binary with
// its symbols in a dbgsym package, md5sums, gzip or xz members,
// copyright, changelog and man page.
func checkDebian(t *testing.T, b built) {
	t.Run("names", func(t *testing.T) { checkNames(t, b) })
	t.Run("relations", func(t *testing.T) { checkRelations(t, b) })
	t.Run("binary", func(t *testing.T) { checkBinary(t, b) })
	t.Run("dbgsym", func(t *testing.T) { checkDbgsym(t, b) })
	t.Run("members", func(t *testing.T) { checkMembers(t, b) })
	t.Run("md5sums", func(t *testing.T) { checkMd5sums(t, b) })
	t.Run("docs", func(t *testing.T) { checkDocs(t, b) })
}

// debianSupervisor is what Debian's supervisor package (supervisord,
// 4.2.5-1 in bookworm) ships or owns, from bookworm's Contents-all index:
// none of it may be in ours, or apt and dpkg would mistake one for the
// other.
var debianSupervisor = []string{
	"etc/supervisor", "lib/systemd/system/supervisor.service", "usr/lib/systemd/system/supervisor.service",
	"usr/bin/supervisord", "usr/bin/supervisorctl", "usr/share/man/man1/supervisor.1.gz",
}

func checkNames(t *testing.T, b built) {
	if p := b.field(t, "Package"); p != pkg {
		t.Errorf("Package: %s, want %s (supervisor is Debian's supervisord)", p, pkg)
	}
	for _, f := range debianSupervisor {
		if _, err := os.Lstat(filepath.Join(b.tree, f)); err == nil {
			t.Errorf("the package ships %s, which is Debian's supervisor package's", f)
		}
	}
	if _, err := os.Stat(filepath.Join(b.tree, "usr/bin/supervisor")); err != nil {
		t.Errorf("the command is no longer /usr/bin/supervisor: %v", err)
	}
}

// checkRelations: Conflicts and Replaces name supervisor only for this
// project's own old versions (0.0~git…), never Debian's supervisord,
// which must stay installable beside it.
func checkRelations(t *testing.T, b built) {
	ours, debians := "0.0~git20261126235655.49438f4", []string{"4.2.5-1", "3.0a8-1.1", "4.2.2-2"}
	for _, field := range []string{"Conflicts", "Replaces"} {
		rel := b.field(t, field)
		m := regexp.MustCompile(`^supervisor \((<<|<=) ([^)]+)\)$`).FindStringSubmatch(rel)
		if m == nil {
			t.Errorf("%s: %q, want one versioned relation on supervisor (the old name) below Debian's versions", field, rel)
			continue
		}
		op := map[string]string{"<<": "lt", "<=": "le"}[m[1]]
		if !versionHolds(ours, op, m[2]) {
			t.Errorf("%s: %s does not reach our old version %s", field, rel, ours)
		}
		for _, v := range debians {
			if versionHolds(v, op, m[2]) {
				t.Errorf("%s: %s reaches Debian's supervisord %s", field, rel, v)
			}
		}
	}
	// Conflicts, not Breaks: with Conflicts + Replaces, `dpkg -i` removes
	// the old package (both ship /usr/bin/supervisor); Breaks would leave
	// it installed and broken. apt satisfies either by upgrading the old
	// package to Debian's supervisord unless told to remove it
	// (`supervisor-`, docs/operations.md; scripts/migration-check shows both).
	if r := b.field(t, "Breaks"); r != "" {
		t.Errorf("Breaks: %q, want none: Conflicts + Replaces makes dpkg -i remove the old package", r)
	}
}

func versionHolds(a, op, b string) bool {
	return exec.Command("dpkg", "--compare-versions", a, op, b).Run() == nil
}

// checkBinary: PIE, no symbol table or DWARF (they are in the dbgsym
// package), a debuglink and a GNU build-id.
func checkBinary(t *testing.T, b built) {
	f, err := elf.Open(filepath.Join(b.tree, "usr/bin/supervisor"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Type != elf.ET_DYN {
		t.Errorf("ELF type %s, want ET_DYN (PIE: go build -buildmode=pie)", f.Type)
	}
	for _, s := range f.Sections {
		if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			t.Errorf("usr/bin/supervisor is not stripped: section %s", s.Name)
		}
	}
	if f.Section(".gnu_debuglink") == nil {
		t.Error("usr/bin/supervisor has no .gnu_debuglink to its debug file")
	}
	if buildID(t, f) == "" {
		t.Error("usr/bin/supervisor has no GNU build-id (go build -ldflags=-B gobuildid)")
	}
	if got := run(t, filepath.Join(b.tree, "usr/bin/supervisor"), "version"); !strings.Contains(got, b.field(t, "Version")) {
		t.Errorf("the stripped binary does not run: version %q", got)
	}
}

// buildID reads the GNU build-id note.
func buildID(t *testing.T, f *elf.File) string {
	t.Helper()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return ""
	}
	data, err := s.Data()
	if err != nil || len(data) < 16 {
		t.Fatalf(".note.gnu.build-id: %v", err)
	}
	// namesz, descsz, type, "GNU\0", then the id.
	namesz := int(f.ByteOrder.Uint32(data[0:4]))
	descsz := int(f.ByteOrder.Uint32(data[4:8]))
	off := 12 + (namesz+3)&^3
	if off+descsz > len(data) {
		t.Fatalf(".note.gnu.build-id is short")
	}
	const hex = "0123456789abcdef"
	var id strings.Builder
	for _, c := range data[off : off+descsz] {
		id.WriteByte(hex[c>>4])
		id.WriteByte(hex[c&15])
	}
	return id.String()
}

// checkDbgsym: the dbgsym package beside the package holds the binary's
// DWARF at the build-id path gdb and debuginfod look up.
func checkDbgsym(t *testing.T, b built) {
	v := b.field(t, "Version")
	dbg := filepath.Join(filepath.Dir(b.deb), pkg+"-dbgsym_"+v+"_amd64.deb")
	f, err := elf.Open(filepath.Join(b.tree, "usr/bin/supervisor"))
	if err != nil {
		t.Fatal(err)
	}
	id := buildID(t, f)
	f.Close()
	field := func(name string) string { return strings.TrimSpace(run(t, "dpkg-deb", "-f", dbg, name)) }
	if got := field("Build-Ids"); got != id {
		t.Errorf("dbgsym Build-Ids: %q, want the binary's %q", got, id)
	}
	if got := field("Depends"); got != pkg+" (= "+v+")" {
		t.Errorf("dbgsym Depends: %q, want %s (= %s)", got, pkg, v)
	}
	tree := t.TempDir()
	run(t, "dpkg-deb", "-x", dbg, tree)
	if len(id) < 3 {
		t.Fatal("no build-id")
	}
	debug, err := elf.Open(filepath.Join(tree, "usr/lib/debug/.build-id", id[:2], id[2:]+".debug"))
	if err != nil {
		t.Fatalf("the dbgsym package lacks the debug file: %v", err)
	}
	defer debug.Close()
	if debug.Section(".symtab") == nil || (debug.Section(".debug_info") == nil && debug.Section(".zdebug_info") == nil) {
		t.Error("the debug file has no symbol table or DWARF")
	}
}

// checkMembers: the control and data members are gzip or xz (lintian
// refuses zstd, which only dpkg 1.21.18 and later read).
func checkMembers(t *testing.T, b built) {
	out, err := exec.Command("ar", "t", b.deb).Output()
	if err != nil {
		t.Skipf("ar (binutils) is not installed: %v", err)
	}
	members := strings.Fields(string(out))
	want := regexp.MustCompile(`^(debian-binary|(control|data)\.tar\.(gz|xz))$`)
	if len(members) != 3 {
		t.Errorf("members %v, want debian-binary, control.tar and data.tar", members)
	}
	for _, m := range members {
		if !want.MatchString(m) {
			t.Errorf("member %s: want gzip or xz (lintian: malformed-deb-archive for zstd)", m)
		}
	}
}

// checkMd5sums: every file but the conffile is listed, and each sum holds.
func checkMd5sums(t *testing.T, b built) {
	data, err := os.ReadFile(filepath.Join(b.control, "md5sums"))
	if err != nil {
		t.Fatalf("no md5sums: %v", err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if _, p, ok := strings.Cut(line, "  "); ok {
			listed[p] = true
		}
	}
	err = filepath.WalkDir(b.tree, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(b.tree, path)
		if !listed[rel] && !strings.HasPrefix(rel, "etc/") {
			t.Errorf("md5sums lacks %s", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("md5sum", "--check", "--quiet", filepath.Join(b.control, "md5sums"))
	cmd.Dir = b.tree
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("md5sum --check: %v\n%s", err, out)
	}
}

// checkDocs: copyright (machine-readable), a changelog whose entry is this
// version, and a man page generated from the command's own help, which
// names every command `supervisor --help` lists.
func checkDocs(t *testing.T, b built) {
	doc := filepath.Join(b.tree, "usr/share/doc", pkg)
	copyright, err := os.ReadFile(filepath.Join(doc, "copyright"))
	if err != nil || !strings.HasPrefix(string(copyright), "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/") {
		t.Errorf("copyright is missing or not machine-readable: %v", err)
	}
	if !regexp.MustCompile(`(?m)^Copyright: \d{4}`).Match(copyright) {
		t.Error("copyright has no notice with a year")
	}
	changelog := gunzip(t, filepath.Join(doc, "changelog.Debian.gz"))
	if first, _, _ := strings.Cut(changelog, "\n"); !strings.HasPrefix(first, pkg+" ("+b.field(t, "Version")+") ") {
		t.Errorf("changelog's entry %q is not %s (%s)", first, pkg, b.field(t, "Version"))
	}
	for i, line := range strings.Split(changelog, "\n") {
		// lintian measures the entry's text, not its header or trailer.
		if strings.HasPrefix(line, "  ") && len([]rune(line)) > 80 {
			t.Errorf("changelog line %d is longer than 80 characters (lintian: debian-changelog-line-too-long): %q", i+1, line)
		}
	}
	page := gunzip(t, filepath.Join(b.tree, "usr/share/man/man8/supervisor.8.gz"))
	if !strings.Contains(page, `.TH SUPERVISOR "8"`) {
		t.Errorf("the man page is not supervisor(8):\n%.300s", page)
	}
	help := run(t, filepath.Join(b.tree, "usr/bin/supervisor"), "--help")
	cmds := regexp.MustCompile(`(?m)^  ([a-z]+) `).FindAllStringSubmatch(help, -1)
	if len(cmds) < 5 {
		t.Fatalf("supervisor --help lists %d commands:\n%s", len(cmds), help)
	}
	for _, c := range cmds {
		if !regexp.MustCompile(`(?m)^` + c[1] + `\b`).MatchString(page) {
			t.Errorf("the man page lacks the command %s that --help lists", c[1])
		}
	}
	if _, err := exec.LookPath("man"); err == nil {
		cmd := exec.Command("man", "--warnings", "-l", "-")
		cmd.Stdin = strings.NewReader(page)
		cmd.Env = append(os.Environ(), "MANWIDTH=80", "LC_ALL=C.UTF-8")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("man --warnings: %v\n%.500s", err, out)
		} else if w := regexp.MustCompile(`(?m)^.*troff.*warning.*$`).FindString(string(out)); w != "" {
			t.Errorf("the man page has troff warnings (lintian: groff-message): %s", w)
		}
	}
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	data, err := io.ReadAll(z)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(data)
}
