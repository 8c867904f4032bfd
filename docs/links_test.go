package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// pages are the Markdown files whose links must resolve, relative to the
// repository root.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	out := []string{"../README.md", "../BENCHMARKS.md", "../deploy/README.md"}
	return append(out, docs...)
}

var (
	fence     = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan  = regexp.MustCompile("`[^`]*`")
	mdLink    = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)
	heading   = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkInHdr = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// prose returns the lines of a Markdown file outside fenced code blocks,
// with their numbers (1-based).
func prose(text string) (lines []string, nums []int) {
	in := false
	for i, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			lines = append(lines, l)
			nums = append(nums, i+1)
		}
	}
	return lines, nums
}

// slug is GitHub's anchor for a heading's text: lowercase, links reduced
// to their text, every character but letters, digits, spaces, '-' and '_'
// dropped, spaces turned into '-'.
func slug(h string) string {
	h = linkInHdr.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors returns every anchor a Markdown file's headings define,
// numbering repeats as GitHub does (x, x-1, x-2).
func anchors(text string) map[string]bool {
	lines, _ := prose(text)
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range lines {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

// TestLinksResolve: every relative link in the pages names a file or
// directory that exists, and every #anchor a heading of the page it points
// to. A page moved or a heading renamed without its links fails here.
func TestLinksResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := cache[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		cache[path] = anchors(string(b))
		return cache[path], nil
	}
	checked := 0
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		lines, nums := prose(string(b))
		for i, l := range lines {
			l = codeSpan.ReplaceAllString(l, "")
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[2]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, frag, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.Join(filepath.Dir(page), file)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: %s does not exist", page, nums[i], target, dest)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: link %q: an anchor into a file that is not Markdown", page, nums[i], target)
					continue
				}
				a, err := anchorsOf(dest)
				if err != nil {
					t.Errorf("%s:%d: link %q: %v", page, nums[i], target, err)
					continue
				}
				if !a[frag] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", page, nums[i], target, dest, frag)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links checked: is the link pattern still matching?", checked)
	}
}

// TestSlug holds slug to GitHub's rules on headings of these pages.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"HTTP API (KServe V2)":                      "http-api-kserve-v2",
		"Reloads, upgrades and systemd":             "reloads-upgrades-and-systemd",
		"Migrating from the package `supervisor`":   "migrating-from-the-package-supervisor",
		"What one client can make the master spend": "what-one-client-can-make-the-master-spend",
		"max_body_bytes and [the budget](x.md)":     "max_body_bytes-and-the-budget",
		"prep → infer":                              "prep--infer",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestREADMEIsAFrontDoor: the README stays short (what it is, the
// picture, quick start, commands, layout, links); the reference lives in
// docs/, and the README links every page there.
func TestREADMEIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, "\n"); n > 300 {
		t.Errorf("README.md has %d lines; keep it at most 300 and move reference to docs/", n)
	}
	docs, _ := filepath.Glob("*.md")
	for _, d := range docs {
		if !strings.Contains(text, "](docs/"+d) {
			t.Errorf("README.md does not link docs/%s", d)
		}
	}
}

// goPackages lists the repository's directories that hold Go files
// (relative, slash-separated), skipping what is not the module's code:
// third_party, testdata, hidden directories, bin, models and out.
func goPackages(t *testing.T) []string {
	t.Helper()
	skip := map[string]bool{"third_party": true, "testdata": true, "bin": true, "models": true, "out": true}
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && (skip[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			rel, err := filepath.Rel("..", filepath.Dir(path))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for p := range seen {
		if p != "." {
			out = append(out, p)
		}
	}
	return out
}

// TestArchitectureListsEveryPackage: docs/architecture.md's package table
// names every Go package of the module, so a new package comes with the
// line that says what it owns.
func TestArchitectureListsEveryPackage(t *testing.T) {
	b, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Packages\n")
	if !ok {
		t.Fatal("architecture.md has no ## Packages section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	pkgs := goPackages(t)
	if len(pkgs) < 40 {
		t.Fatalf("found only %d packages: is the walk still from the repository root?", len(pkgs))
	}
	for _, p := range pkgs {
		if !strings.Contains(table, "`"+p+"`") {
			t.Errorf("docs/architecture.md, Packages: no row names `%s`; add one saying what it owns", p)
		}
	}
}
