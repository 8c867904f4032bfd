package main

import (
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestStatusPageInHeadlessChromium loads /status in headless Chromium (as
// an operator's browser would: the page must render with no asset from
// elsewhere), checks that the rendered DOM has a row for every worker with
// its pid, and takes a screenshot that must be a real, non-blank image.
// `make test` installs Debian's chromium when it can (scripts/setup-test-tools).
func TestStatusPageInHeadlessChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed and could not be (scripts/setup-test-tools needs root and apt)")
	}
	in := startInstance(t, options{prepWorkers: 2})
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
	for _, w := range in.status().Workers {
		row := regexp.MustCompile(fmt.Sprintf(`<tr>(<td[^>]*>[^<]*</td>)*<td[^>]*>%s</td><td[^>]*>%d</td>`, regexp.QuoteMeta(w.Name), w.PID))
		if !row.MatchString(dom) {
			t.Errorf("the rendered page has no row for %s (pid %d)", w.Name, w.PID)
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
