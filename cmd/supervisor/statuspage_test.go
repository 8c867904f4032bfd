package main

import (
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestStatusPageInHeadlessChromium loads /status in headless Chromium (as
// an operator's browser would: the page must render with no asset from
// elsewhere), checks that the rendered DOM has a row for every worker with
// its pid, for every model (one unavailable, whose file name holds a
// <script> tag that must stay text, never become an element) and for every
// prep worker's arena, and takes a screenshot that must be a real,
// non-blank image. `make test` installs Debian's chromium when it can
// (scripts/setup-test-tools).
func TestStatusPageInHeadlessChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed and could not be (scripts/setup-test-tools needs root and apt)")
	}
	evil := writeBytes(t, filepath.Join(t.TempDir(), "<script>document.title='pwned'<!--.onnx"), []byte("this is not an ONNX model"))
	in := startInstance(t, options{prepWorkers: 2, modelNames: []string{"mlp"}, models: map[string]string{"garbage": evil}})
	url := in.metricsURL + "/status"
	run := func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
			"--user-data-dir=" + t.TempDir(), "--window-size=1280,900"}
		out, err := exec.CommandContext(ctx, chromium, append(base, args...)...).Output()
		if err != nil {
			t.Fatalf("chromium %v: %v", args, err)
		}
		return out
	}

	dom := string(run("--dump-dom", url))
	st := in.status()
	workers := table(t, dom, "workers")
	for _, w := range st.Workers {
		row := regexp.MustCompile(fmt.Sprintf(`<tr>(<td[^>]*>[^<]*</td>)*<td[^>]*>%s</td><td[^>]*>%d</td>`, regexp.QuoteMeta(w.Name), w.PID))
		if !row.MatchString(workers) {
			t.Errorf("the rendered page has no row for %s (pid %d)", w.Name, w.PID)
		}
	}
	models := table(t, dom, "models")
	for _, m := range st.Models {
		want := `<tr><td class="l">` + m.Name + `</td><td class="l ok">ready</td>`
		if !m.Ready {
			want = `<tr class="bad"><td class="l">` + m.Name + `</td><td class="l">UNAVAILABLE</td><td class="l">`
		}
		if !strings.Contains(models, want) {
			t.Errorf("the rendered models table has no row %q for %+v", want, m)
		}
	}
	if m := modelState(t, st, "garbage"); m.Ready || !strings.Contains(models, "&lt;script&gt;") {
		t.Errorf("model garbage is %+v; want unavailable, its reason naming its file as text (&lt;script&gt;)", m)
	}
	// Chromium runs scripts before it dumps the DOM: one from the reason
	// would be an element, and would have renamed the page.
	if strings.Contains(dom, "<script") || !strings.Contains(dom, "<title>supervisor status</title>") {
		t.Error("the model's reason became markup in the rendered page")
	}
	arenas := table(t, dom, "arenas")
	for _, w := range st.Workers {
		row := regexp.MustCompile(fmt.Sprintf(`<tr>(<td[^>]*>[^<]*</td>)?<td[^>]*>%s</td><td>%d</td><td>\d+/64</td>`, regexp.QuoteMeta(w.Name), w.PID))
		if strings.HasPrefix(w.Name, "prep-") && !row.MatchString(arenas) {
			t.Errorf("the rendered arenas table has no row for %s (pid %d) with its 64 slots", w.Name, w.PID)
		}
	}
	if t.Failed() {
		t.Logf("rendered DOM:\n%s", dom)
	}

	shot := filepath.Join(t.TempDir(), "status.png")
	run("--screenshot="+shot, url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y && len(colours) < 3; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r<<16^g<<8^bl] = true
		}
	}
	if b.Dx() != 1280 || b.Dy() != 900 || len(colours) < 3 {
		t.Fatalf("screenshot %dx%d with %d colours: want 1280x900 and a rendered page", b.Dx(), b.Dy(), len(colours))
	}
}

// table is the rendered HTML table with the id, from its start tag to
// its end tag.
func table(t *testing.T, dom, id string) string {
	t.Helper()
	i := strings.Index(dom, `<table id="`+id+`">`)
	if i < 0 {
		t.Fatalf("the rendered page has no table %q:\n%s", id, dom)
	}
	n := strings.Index(dom[i:], "</table>")
	if n < 0 {
		t.Fatalf("table %q does not end:\n%s", id, dom[i:])
	}
	return dom[i : i+n]
}
