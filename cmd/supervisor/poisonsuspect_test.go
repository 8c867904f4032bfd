package main

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
)

// rowsBody is a V2 request of the SlowSinRows model: one row n.
func rowsBody(n int) []byte {
	return fmt.Appendf(nil, `{"inputs":[{"name":"n","datatype":"INT64","shape":[1,1],"data":[%d]}]}`, n)
}

// TestPoisonSuspectRunsAlone: a body whose run outlives max_run_time
// (SlowSinRows, n 1e6 through 1000 nodes: seconds; max_run_time 300ms;
// a node of 1e6 sines is short enough to end within the 1s grace on a
// loaded machine, where one of 1e7 may not) and an innocent one
// (n 2), sent at once, share a batch (preferred size 2), both answered
// 500 and struck once. Sent at once again, as a client or a retrying
// load balancer resends both, each is a suspect and runs alone: the slow
// one times out again and is quarantined (422 next), the innocent one is
// served (200) and so acquitted: sent once more it is batched again (not
// counted as a solo run) and served. Before suspects ran alone, the
// second send batched them again and the innocent body was quarantined
// with the slow one.
func TestPoisonSuspectRunsAlone(t *testing.T) {
	rows := writeModel(t, t.TempDir(), "rows", onnxmodel.SlowSinRows(1000))
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		modelItems: fmt.Sprintf("  - {name: rows, path: %s, max_run_time: 300ms, "+
			"batching: {max_batch_size: 8, max_queue_delay: 2s, preferred_batch_sizes: [2]}}\n", rows),
		extra: "limits:\n  poison_threshold: 2\n  poison_ttl: 1m\n"})
	const path = "/v2/models/rows/infer"
	slow, innocent := rowsBody(1_000_000), rowsBody(2)
	both := [][]byte{slow, innocent}
	if got, want := postAll(in, path, both), []int{http.StatusInternalServerError, http.StatusInternalServerError}; !slices.Equal(got, want) {
		t.Fatalf("the slow and the innocent body batched = %v, want %v: one run, timed out", got, want)
	}
	if got, want := postAll(in, path, both), []int{http.StatusInternalServerError, http.StatusOK}; !slices.Equal(got, want) {
		t.Fatalf("both resent = %v, want %v: each runs alone, only the slow one times out", got, want)
	}
	if code, b, _ := in.post(path, slow, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("the slow body after two run timeouts = %d %s, want 422", code, b)
	}
	if code, b, _ := in.post(path, innocent, nil); code != http.StatusOK {
		t.Fatalf("the innocent body after its acquittal = %d %s, want 200", code, b)
	}
	wantSeries(t, in, map[string]float64{
		`supervisor_run_timeouts_total{model="rows"}`:       3, // both in the batch, then the slow one alone
		`supervisor_poison_quarantined_total{model="rows"}`: 1,
		`supervisor_poison_solo_runs_total{model="rows"}`:   2, // both resent; the innocent's third send is batched
		`supervisor_poison_acquitted_total{model="rows"}`:   1, // the innocent's solo 200
	})
}

// wantSeries wants each of series at its value on /metrics.
func wantSeries(t *testing.T, in *instance, series map[string]float64) {
	t.Helper()
	m := scrapeMetrics(t, in)
	for s, want := range series {
		if m[s] != want {
			t.Errorf("%s = %v, want %v", s, m[s], want)
		}
	}
}

// TestPoisonSuspectCrashSparesAServedInnocent: a crashing body
// (ModByXMinus3, an element 3) and an innocent one sent at once share a
// batch (preferred size 2) and both crash: 502, a strike each. Resent,
// the innocent one first, it is a suspect and runs alone at once (200)
// instead of waiting up to 10s for company, so the poison's second
// crash, alone too, does not strike it: the poison is refused 422 next,
// the innocent served. Before suspects ran alone, the innocent queued
// for a batch, crashed with the poison again, and was quarantined with
// it. A crash still strikes every request in flight on the worker (an
// innocent queued behind the poison is struck: poison.go says why), so
// the innocent is sent first and the poison only once it is answered.
// Served alone, the innocent is acquitted: sent next with a fresh body
// (company, so that a batched send does not wait max_queue_delay), it is
// served and not run alone: the solo runs stay at two.
func TestPoisonSuspectCrashSparesAServedInnocent(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		models:   map[string]string{"poisoned": writeModel(t, t.TempDir(), "poisoned", onnxmodel.ModByXMinus3())},
		batching: map[string]string{"poisoned": "{max_batch_size: 8, max_queue_delay: 10s, preferred_batch_sizes: [2]}"},
		extra:    "limits:\n  poison_threshold: 2\n  poison_ttl: 1m\n"})
	bad, innocent := modBody("1,2,3,4"), modBody("5,6,7,8")
	crashBatch(t, in, poisonedPath, bad, innocent)
	served := make(chan int, 1)
	go func() {
		code, _, _ := in.post(poisonedPath, innocent, nil)
		served <- code
	}()
	code := 0
	pollUntil(t, 10*time.Second, "the innocent body resent to be answered, or queued for a batch", func() bool {
		select {
		case code = <-served:
			return true
		default:
			return modelStats(t, in, "poisoned").QueueDepth == 1
		}
	})
	crashBatch(t, in, poisonedPath, bad)
	if code == 0 {
		select {
		case code = <-served:
		case <-time.After(30 * time.Second):
			t.Fatal("the innocent body resent was not answered within 30s")
		}
	}
	if code != http.StatusOK {
		t.Fatalf("the innocent body resent first = %d, want 200: it runs alone, before the poison", code)
	}
	wantPoisoned(t, in, "the poison body after two crashes", bad, nil, http.StatusUnprocessableEntity)
	if got, want := postAll(in, poisonedPath, [][]byte{innocent, modBody("9,10,11,12")}), []int{http.StatusOK, http.StatusOK}; !slices.Equal(got, want) {
		t.Fatalf("the acquitted innocent body and a fresh one = %v, want %v", got, want)
	}
	wantSeries(t, in, map[string]float64{
		`supervisor_poison_quarantined_total{model="poisoned"}`: 1,
		`supervisor_poison_solo_runs_total{model="poisoned"}`:   2, // the innocent resent, the poison's second crash
		`supervisor_poison_acquitted_total{model="poisoned"}`:   1,
	})
}
