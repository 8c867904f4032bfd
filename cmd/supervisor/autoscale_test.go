package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// autoscaleSection makes the prep pool autoscale between 1 and 3 workers
// with windows short enough for a test. The thresholds are for a noisy
// 2-core host: the load below puts several requests per prep CPU in the
// prep stage (busy well above 0.5), and none once it stops (0 < 0.2);
// the idle-CPU check is off, since other processes may keep every CPU
// busy.
const autoscaleSection = `min_workers: 1
  max_workers: 3
  autoscale: {interval: 250ms, up_after: 750ms, down_after: 1500ms, cooldown: 1s, up_busy: 0.5, down_busy: 0.2, min_idle_cpus: 0}`

// TestAutoscaleGrowsAndShrinksPrep serves an image model whose requests
// are large JPEGs (decoding them is the slow part, so prep saturates),
// drives it with more concurrent clients than prep CPUs until the pool
// reaches max_workers, then stops: the pool shrinks back to min_workers.
// No request fails throughout, and status and /metrics tell the story.
func TestAutoscaleGrowsAndShrinksPrep(t *testing.T) {
	in := startImageInstance(t, autoscaleSection)
	photo := testJPEG(t, 2400, 1800)
	if n := prepWorkerGauge(t, in); n != 1 {
		t.Fatalf("supervisor_prep_workers %d at start, want 1 (min_workers)", n)
	}

	load := startImageLoad(in, photo, 8)
	polltest.Until(t, 40*time.Second, 250*time.Millisecond, "the prep pool to grow to max_workers 3",
		func() bool { return prepWorkerGauge(t, in) == 3 })
	sent, failed := load.stop()
	if sent == 0 || len(failed) > 0 {
		t.Fatalf("under load: %d requests, failures %q; want some and none failed", sent, failed)
	}
	// The gauge drops when a shrink starts; status records the shrink
	// once the removed worker has drained: wait for both.
	polltest.Until(t, 30*time.Second, 250*time.Millisecond, "the prep pool to shrink to min_workers 1, the shrink recorded",
		func() bool {
			a := in.status().Autoscale
			return prepWorkerGauge(t, in) == 1 && a != nil && a.Last != nil && a.Last.To == 1
		})

	st := in.status()
	a := st.Autoscale
	if a == nil || a.Workers != 1 || a.Min != 1 || a.Max != 3 || a.Ups < 2 || a.Downs < 2 || a.Last == nil || a.Last.Direction != "down" {
		t.Fatalf("status autoscale = %+v, want 1 worker in 1..3 after at least 2 ups and 2 downs, the last down", a)
	}
	if a.Last.Reason == "" || a.Last.Error != "" {
		t.Errorf("last decision %+v, want a reason and no error", a.Last)
	}
	m := scrapeMetrics(t, in)
	if up, down := m[`supervisor_autoscale_events_total{direction="up"}`], m[`supervisor_autoscale_events_total{direction="down"}`]; up < 2 || down < 2 {
		t.Errorf("supervisor_autoscale_events_total up %g, down %g; want at least 2 each", up, down)
	}
	if code, _, _ := in.post("/v2/models/img/infer", photo, map[string]string{"Content-Type": "image/jpeg"}); code != http.StatusOK {
		t.Errorf("request after the shrink: status %d, want 200", code)
	}
	if text, err := in.cli("status"); err != nil || !regexp.MustCompile(`prep autoscale: 1 workers \(min 1, max 3\)`).MatchString(text) {
		t.Errorf("supervisor status (%v) lacks the autoscale line:\n%s", err, text)
	}
}

// TestAutoscaleReloadKeepsTheSize: a reload keeps the size the
// autoscaler reached, brought within the new bounds, instead of going
// back to prep.workers (1).
func TestAutoscaleReloadKeepsTheSize(t *testing.T) {
	// No shrink within the test: down_after 1m.
	in := startImageInstance(t, strings.Replace(autoscaleSection, "down_after: 1500ms", "down_after: 1m", 1))
	load := startImageLoad(in, testJPEG(t, 2400, 1800), 8)
	polltest.Until(t, 40*time.Second, 250*time.Millisecond, "the prep pool to grow to 3",
		func() bool { return prepWorkerGauge(t, in) == 3 })
	if sent, failed := load.stop(); sent == 0 || len(failed) > 0 {
		t.Fatalf("under load: %d requests, failures %q; want some and none failed", sent, failed)
	}
	reloadEdited(t, in, "max_workers: 3", "max_workers: 2")
	if n := prepWorkerGauge(t, in); n != 2 {
		t.Errorf("prep workers after a reload to max_workers 2: %d, want 2 (the 3 reached, within the new bounds)", n)
	}
	if a := in.status().Autoscale; a == nil || a.Workers != 2 || a.Max != 2 {
		t.Errorf("status autoscale after the reload = %+v, want 2 workers, max 2", a)
	}
}

// startImageInstance serves the generated default model as the image
// model "img" (and the MLP), one prep worker to start, with prepSection
// in prep:.
func startImageInstance(t *testing.T, prepSection string) *instance {
	return startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}, maxBodyBytes: "16MiB",
		prepSection: prepSection, modelItems: fmt.Sprintf(`  - name: img
    path: %s
    preprocess: {kind: image, resize: shorter-crop, scale: 1/255}
`, filepath.Join(modelsDir, "default.onnx"))})
}

// imageLoad is clients posting one image in a loop until stop.
type imageLoad struct {
	quit   chan struct{}
	wg     sync.WaitGroup
	sent   atomic.Int64
	mu     sync.Mutex
	failed []string
}

func startImageLoad(in *instance, photo []byte, clients int) *imageLoad {
	l := &imageLoad{quit: make(chan struct{})}
	for range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; i < 100000; i++ { // bounded; stop ends it long before
				select {
				case <-l.quit:
					return
				default:
				}
				code, body, _, err := in.send(http.MethodPost, "/v2/models/img/infer", photo, map[string]string{"Content-Type": "image/jpeg"})
				l.sent.Add(1)
				if code != http.StatusOK {
					l.mu.Lock()
					l.failed = append(l.failed, fmt.Sprintf("%d %v %.200s", code, err, body))
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

// stop ends the load, waits for the clients and returns what they saw.
func (l *imageLoad) stop() (int64, []string) {
	close(l.quit)
	l.wg.Wait()
	return l.sent.Load(), l.failed
}

// prepWorkerGauge is supervisor_prep_workers from /metrics.
func prepWorkerGauge(t *testing.T, in *instance) int {
	t.Helper()
	return int(scrapeMetrics(t, in)["supervisor_prep_workers"])
}
