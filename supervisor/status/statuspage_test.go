package status

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// TestStatusPageShowsModelsArenasAndFaults renders the page of a report
// with a ready model, one unavailable for a reason that holds markup (ONNX
// Runtime's text or a file path: it must come out as text, never as an
// element), one no infer worker serves, a full and a free prep arena, and
// a damaged scoreboard: each shows, the unavailable models marked.
func TestStatusPageShowsModelsArenasAndFaults(t *testing.T) {
	now := time.Now()
	st := control.Status{PID: 1, Ready: true, ScoreboardFaults: 2, ScoreboardError: "board <truncated> at 12:00",
		Models: []control.ModelState{
			{Name: "mlp", Ready: true},
			{Name: "evil", Reason: `could not load /m/<script>alert(1)</script>.onnx: "bad" & worse`},
			{Name: "orphan"},
		}}
	slots := []shm.SlotSnapshot{
		{State: shm.Ready, Role: "prep", Name: "prep-0", PID: os.Getpid(),
			Arena: shm.ArenaSnapshot{Slots: 4, InUse: 4, FullSince: now.Add(-5 * time.Second), Full: 17}},
		{State: shm.Ready, Role: "prep", Name: "prep-1", PID: os.Getppid(), Arena: shm.ArenaSnapshot{Slots: 4, InUse: 1}},
		{State: shm.Ready, Role: "infer", Name: "infer-0", PID: os.Getpid()},
	}
	page := string(Page(buildReport(reportInput{now: now, status: st, slots: slots}), nil))

	if strings.Contains(page, "<script") || strings.Contains(page, "<truncated>") {
		t.Fatalf("a reason or the scoreboard error was not escaped:\n%s", page)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`<tr><td class="l">mlp</td><td class="l ok">ready</td>`),
		regexp.MustCompile(`<tr class="bad"><td class="l">evil</td><td class="l">UNAVAILABLE</td><td class="l">could not load /m/&lt;script&gt;alert\(1\)&lt;/script&gt;.onnx: &#34;bad&#34; &amp; worse</td>`),
		regexp.MustCompile(`<tr class="bad"><td class="l">orphan</td><td class="l">UNAVAILABLE</td><td class="l">no infer worker serves</td>`),
		regexp.MustCompile(`<tr class="bad"><td class="l">prep-0</td><td>\d+</td><td>4/4</td><td>5s</td><td>17</td></tr>`),
		regexp.MustCompile(`<tr><td class="l">prep-1</td><td>\d+</td><td>1/4</td><td>-</td><td>0</td></tr>`),
		regexp.MustCompile(`class="bad">SCOREBOARD DAMAGED 2 time\(s\), recreated; last: board &lt;truncated&gt; at 12:00<`),
		regexp.MustCompile(`Bottleneck: prep shared-memory arena full \(prep-0 4/4`),
	} {
		if !want.MatchString(page) {
			t.Errorf("page lacks %s", want)
		}
	}
	arenas := page[strings.Index(page, `<table id="arenas">`):]
	if strings.Contains(arenas[:strings.Index(arenas, "</table>")], "infer-0") {
		t.Error("the arena table lists an infer worker, which has no arena")
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}
}

// TestStatusPageWithoutModelsOrArenas: a report from the scoreboard alone
// (the control socket did not answer) has no models: the page says so, and
// lists no arena table when no worker has one (handoff: inline).
func TestStatusPageWithoutModelsOrArenas(t *testing.T) {
	r := buildReport(reportInput{now: time.Now(), slots: []shm.SlotSnapshot{{State: shm.Ready, Role: "prep", Name: "prep-0", PID: os.Getpid()}}})
	r.ControlError = "connection refused"
	page := string(Page(r, nil))
	if !strings.Contains(page, "none reported (the master did not answer on its control socket)") {
		t.Errorf("page does not say why no model is listed:\n%s", page)
	}
	if strings.Contains(page, `id="arenas"`) || strings.Contains(page, "SCOREBOARD DAMAGED") {
		t.Errorf("page shows an arena table or a scoreboard fault it does not have:\n%s", page)
	}
}
