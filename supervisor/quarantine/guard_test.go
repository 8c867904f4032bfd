package quarantine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// crashProxy plays a prep worker whose infer worker exits on the body
// "bad" (502 with worker.InferExitedHeader) and whose run outlives
// max_run_time on "slow" (500 with worker.RunTimeoutHeader); on "gone"
// the client hangs up (lb.ErrClientGone); on "code:N" it answers status
// N; any other body is 200.
// alone lists the bodies sent marked worker.AloneHeader, in order.
type crashProxy struct {
	sent  int
	alone []string
}

func (p *crashProxy) ServeHTTPFor(ctx *fasthttp.RequestCtx, _ time.Time, _ lb.Client, _ lb.AnswerGate) error {
	p.sent++
	if ctx.Request.Header.Peek(worker.AloneHeader) != nil {
		p.alone = append(p.alone, string(ctx.Request.Body()))
	}
	switch string(ctx.Request.Body()) {
	case "bad":
		ctx.SetStatusCode(fasthttp.StatusBadGateway)
		ctx.Response.Header.Set(worker.InferExitedHeader, "m")
	case "gone":
		return fmt.Errorf("proxying: %w", lb.ErrClientGone)
	case "slow":
		ctx.SetStatusCode(fasthttp.StatusInternalServerError)
		ctx.Response.Header.Set(worker.RunTimeoutHeader, "m")
	default:
		code, ok := strings.CutPrefix(string(ctx.Request.Body()), "code:")
		status, err := strconv.Atoi(code)
		if !ok || err != nil {
			status = fasthttp.StatusOK
		}
		ctx.SetStatusCode(status)
	}
	return nil
}
func (p *crashProxy) SetRequestID(*fasthttp.RequestCtx) {}
func (p *crashProxy) Do(*fasthttp.Request, *fasthttp.Response, time.Time) error {
	return nil
}

// poisonRig is a guard over crashProxy with poison_threshold threshold;
// crashed is Options.InferExited.
func poisonRig(threshold int, crashed func(string, time.Duration) (Exit, bool)) (*rig, *crashProxy, *config.Config) {
	cfg := config.DefaultConfig()
	cfg.Limits.PoisonThreshold = threshold
	p := &crashProxy{}
	return newRig(cfg, p, crashed), p, cfg
}

// crashedYes is the master's answer for a worker that crashed on its
// own, with nothing known of its work (no scoreboard).
func crashedYes(string, time.Duration) (Exit, bool) { return Exit{Crashed: true}, true }

// killed is the master's answer for a worker killed from outside.
func killed(string, time.Duration) (Exit, bool) { return Exit{}, true }

// send is one inference request of body through the guard; marked
// says an internal header (the infer worker's exit, a run timeout) was
// left for the client.
func send(f *rig, c *config.Config, body string) (code int, msg string, marked bool) {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/v2/models/m/infer")
	ctx.Request.SetBodyString(body)
	f.forward(&ctx, c, "m", time.Time{}, nil, nil)
	h := &ctx.Response.Header
	return ctx.Response.StatusCode(), string(ctx.Response.Body()), h.Peek(worker.InferExitedHeader) != nil || h.Peek(worker.RunTimeoutHeader) != nil
}

func TestPoisonBodyIsRefusedAfterThreshold(t *testing.T) {
	f, p, c := poisonRig(2, crashedYes)
	for i := 1; i <= 2; i++ {
		if code, _, marked := send(f, c, "bad"); code != fasthttp.StatusBadGateway || marked {
			t.Fatalf("crash %d: %d (internal header left: %v), want 502 without the header", i, code, marked)
		}
	}
	code, msg, _ := send(f, c, "bad")
	if code != fasthttp.StatusUnprocessableEntity || !strings.Contains(msg, `model \"m\"`) || p.sent != 2 {
		t.Fatalf("third send: %d %s after %d sent, want 422 naming the model and no third send", code, msg, p.sent)
	}
	if code, _, _ := send(f, c, "good"); code != fasthttp.StatusOK {
		t.Fatalf("another body: %d, want 200", code)
	}
	if s := f.Stats(); s.Quarantined["m"] != 1 || s.Current["m"] != 1 {
		t.Fatalf("stats %+v, want m quarantined once", s)
	}
}

// TestQuarantineEndsWithTheWeights: a body quarantined while model m is
// served from one file (content identity A) is sent again once m is
// reloaded from another (B), and struck afresh if it still crashes; the
// quarantine on A's weights stays theirs.
func TestQuarantineEndsWithTheWeights(t *testing.T) {
	f, p, c := poisonRig(2, crashedYes)
	var identity atomic.Value
	identity.Store("sha256:A")
	f.o.ModelIdentity = func(model string) string {
		if model != "m" {
			t.Errorf("ModelIdentity(%q), want m", model)
		}
		return identity.Load().(string)
	}
	send(f, c, "bad")
	send(f, c, "bad")
	if code, _, _ := send(f, c, "bad"); code != fasthttp.StatusUnprocessableEntity || p.sent != 2 {
		t.Fatalf("third send on A's weights: %d after %d sent, want 422 and no third send", code, p.sent)
	}
	identity.Store("sha256:B") // reloaded from other bytes
	if code, _, _ := send(f, c, "bad"); code != fasthttp.StatusBadGateway || p.sent != 3 {
		t.Fatalf("the body on B's weights: %d after %d sent, want it sent again (502: B crashes too)", code, p.sent)
	}
	send(f, c, "bad")
	if code, _, _ := send(f, c, "bad"); code != fasthttp.StatusUnprocessableEntity || p.sent != 4 {
		t.Fatalf("after two crashes on B's weights: %d after %d sent, want 422", code, p.sent)
	}
	if n := f.Stats().Quarantined["m"]; n != 2 {
		t.Fatalf("quarantined %d times, want 2: once on each file's weights", n)
	}
}

// TestPoisonNotCounted: with poison_threshold 0, or when the infer worker
// was killed from outside rather than crashed, a body is never refused.
func TestPoisonNotCounted(t *testing.T) {
	for name, f := range map[string]func() (*rig, *crashProxy, *config.Config){
		"threshold 0":         func() (*rig, *crashProxy, *config.Config) { return poisonRig(0, crashedYes) },
		"killed, not crashed": func() (*rig, *crashProxy, *config.Config) { return poisonRig(2, killed) },
	} {
		f, p, c := f()
		for i := range 5 {
			if code, _, marked := send(f, c, "bad"); code != fasthttp.StatusBadGateway || marked {
				t.Fatalf("%s: send %d: %d (header left %v), want 502 without the header", name, i, code, marked)
			}
		}
		if p.sent != 5 || f.q.Len() != 0 {
			t.Fatalf("%s: sent %d, quarantine holds %d: want 5 and 0", name, p.sent, f.q.Len())
		}
	}
}

// TestRunTimeoutStrikes: a run stopped at max_run_time is counted by model
// and its header never reaches the client; it is a strike against the
// body even when the master would call an exit a kill from outside (only
// the worker stops a run), and with poison_threshold 0 it is counted but
// never refused.
func TestRunTimeoutStrikes(t *testing.T) {
	for _, c := range []struct {
		name      string
		threshold int
		sent      int // of 3 sends, how many reach the proxy
	}{{"threshold 2", 2, 2}, {"threshold 0", 0, 3}} {
		f, p, cfg := poisonRig(c.threshold, killed)
		codes := make([]int, 3)
		for i := range codes {
			var marked bool
			if codes[i], _, marked = send(f, cfg, "slow"); marked {
				t.Fatalf("%s: send %d left %s for the client", c.name, i, worker.RunTimeoutHeader)
			}
		}
		want := []int{500, 500, 500}
		if c.threshold > 0 {
			want[2] = fasthttp.StatusUnprocessableEntity
		}
		if !slices.Equal(codes, want) || p.sent != c.sent {
			t.Errorf("%s: answers %v after %d sent to the proxy, want %v after %d", c.name, codes, p.sent, want, c.sent)
		}
		if n := f.Stats().RunTimeouts["m"]; n != int64(c.sent) {
			t.Errorf("%s: %d run timeouts counted, want %d", c.name, n, c.sent)
		}
	}
}

// TestAbandonedIsStruckByALaterCrash: a request whose client hung up is
// struck by a worker crash after it was sent (WorkerCrashed), once, not
// by one before; two such crashes quarantine its body. With
// poison_threshold 0 nothing is remembered.
func TestAbandonedIsStruckByALaterCrash(t *testing.T) {
	f, p, c := poisonRig(2, crashedYes)
	f.WorkerCrashed(Exit{At: time.Now(), Crashed: true}) // before any send: strikes nothing
	for i := 1; i <= 2; i++ {
		send(f, c, "gone")
		f.WorkerCrashed(Exit{At: time.Now(), Crashed: true})
		f.WorkerCrashed(Exit{At: time.Now(), Crashed: true}) // the same request is struck once
		if got := f.q.Len(); got != 1 {
			t.Fatalf("after abandoned send %d and its crash the quarantine holds %d, want 1", i, got)
		}
	}
	if code, _, _ := send(f, c, "gone"); code != fasthttp.StatusUnprocessableEntity || p.sent != 2 {
		t.Fatalf("third send of a body abandoned at two crashes: %d after %d sent, want 422 after 2", code, p.sent)
	}
	f, _, c = poisonRig(0, crashedYes)
	send(f, c, "gone")
	if r := f.abandoned.take(Exit{At: time.Now()}); len(r) != 0 {
		t.Fatalf("with poison_threshold 0 the front remembered %d abandoned requests, want none", len(r))
	}
}

// TestSuspectsRunAlone: a body struck below the threshold, by a crash or
// a run timeout, is sent marked to run alone, and counted; a body never
// struck is not, nor any body with the quarantine off.
func TestSuspectsRunAlone(t *testing.T) {
	f, p, c := poisonRig(3, crashedYes)
	for _, body := range []string{"good", "bad", "slow", "good", "bad", "slow", "good", "bad"} {
		send(f, c, body)
	}
	if want := []string{"bad", "slow", "bad"}; !slices.Equal(p.alone, want) {
		t.Fatalf("sent alone %q, want %q: each struck body after its first strike, until quarantined", p.alone, want)
	}
	if code, _, _ := send(f, c, "bad"); code != fasthttp.StatusUnprocessableEntity {
		t.Fatalf("bad after three crashes = %d, want 422", code)
	}
	if n := f.Stats().SoloRuns["m"]; n != 3 {
		t.Fatalf("solo runs counted %d, want 3", n)
	}
	off, p, c := poisonRig(0, crashedYes)
	for range 3 {
		send(off, c, "bad")
	}
	if len(p.alone) != 0 {
		t.Fatalf("with poison_threshold 0, sent alone %q, want none", p.alone)
	}
}

// TestClientCannotAskToRunAlone: the internal scheduling headers a client
// sends, worker.AloneHeader among them, are removed before the request
// goes on.
func TestClientCannotAskToRunAlone(t *testing.T) {
	var h fasthttp.RequestHeader
	for _, k := range []string{worker.AloneHeader, worker.PriorityHeader, worker.DeadlineHeader} {
		h.Set(k, "1")
	}
	if _, err := admission.ClientDeadline(&h); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{worker.AloneHeader, worker.PriorityHeader, worker.DeadlineHeader} {
		if v := h.Peek(k); v != nil {
			t.Errorf("a client's %s: %q reached the prep worker", k, v)
		}
	}
}

// TestServedSuspectIsAcquitted: a suspect whose solo run is answered 2xx,
// or refused for its body (400, 413, 415, 422), is acquitted (counted)
// and sent batched next; one answered any other way stays a suspect and
// runs alone again; a crash or a run timeout is still a strike.
func TestServedSuspectIsAcquitted(t *testing.T) {
	for _, c := range []struct {
		status int
		acquit bool
	}{
		{200, true}, {204, true}, {400, true}, {413, true}, {415, true}, {422, true},
		{404, false}, {408, false}, {429, false}, {500, false}, {502, false}, {503, false}, {504, false},
	} {
		f, p, cfg := poisonRig(2, crashedYes)
		body := fmt.Sprintf("code:%d", c.status)
		f.q.Crashed("m", f.q.KeyOf("m", "", []byte(body)), 2, time.Minute)
		send(f, cfg, body)
		send(f, cfg, body)
		alone, acquitted := len(p.alone), f.Stats().Acquitted["m"]
		if c.acquit && (alone != 1 || acquitted != 1) || !c.acquit && (alone != 2 || acquitted != 0) {
			t.Errorf("a suspect answered %d, sent twice: %d sent alone, %d acquitted; want acquitted %v (alone once, then batched)",
				c.status, alone, acquitted, c.acquit)
		}
	}
	f, p, cfg := poisonRig(3, crashedYes)
	for _, body := range []string{"bad", "slow", "bad", "slow"} {
		send(f, cfg, body)
	}
	if n := f.Stats().Acquitted["m"]; n != 0 || len(p.alone) != 2 {
		t.Fatalf("suspects that crashed or timed out alone: %d acquitted, %d sent alone, want 0 and 2", n, len(p.alone))
	}
	if code, _, _ := send(f, cfg, "bad"); code == fasthttp.StatusUnprocessableEntity || len(p.alone) != 3 {
		t.Fatalf("bad after two of three strikes = %d, %d sent alone, want a third solo run", code, len(p.alone))
	}
}

// workProxy plays a prep worker whose infer worker dies under the first
// dies sends (502, worker.InferExitedHeader naming its socket) and
// serves the rest; tokens are the worker.TokenHeader of each send.
type workProxy struct {
	dies   int
	tokens []uint64
	alone  int
}

func (p *workProxy) ServeHTTPFor(ctx *fasthttp.RequestCtx, _ time.Time, _ lb.Client, _ lb.AnswerGate) error {
	p.tokens = append(p.tokens, worker.Token(ctx.Request.Header.Peek(worker.TokenHeader)))
	if ctx.Request.Header.Peek(worker.AloneHeader) != nil {
		p.alone++
	}
	if len(p.tokens) <= p.dies {
		ctx.SetStatusCode(fasthttp.StatusBadGateway)
		ctx.Response.Header.Set(worker.InferExitedHeader, "infer.sock")
		return nil
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	return nil
}
func (p *workProxy) SetRequestID(*fasthttp.RequestCtx)                         {}
func (p *workProxy) Do(*fasthttp.Request, *fasthttp.Response, time.Time) error { return nil }

// TestCrashBlamesOnlyTheWorkAtIt: a crash strikes a request only when it
// was at work in the one run executing; at work beside another run it
// makes a suspect (alone next time) and never a strike, however often;
// not at work (queued), the request is sent again, once, and served,
// whether its worker crashed or was killed, and nothing is counted.
func TestCrashBlamesOnlyTheWorkAtIt(t *testing.T) {
	const other = 999_999 // a token of another request, in another run
	for _, tc := range []struct {
		name    string
		crashed bool
		work    func(tok uint64) map[uint16][]uint64
		// want: the status of each of three sends, the sends the proxy
		// got, how many of them alone.
		want        []int
		sent, alone int
	}{
		{"alone in the crash", true, func(tok uint64) map[uint16][]uint64 { return map[uint16][]uint64{1: {tok, 5}} },
			[]int{502, 502, 422}, 2, 1},
		{"beside another run", true, func(tok uint64) map[uint16][]uint64 { return map[uint16][]uint64{1: {tok}, 2: {other}} },
			[]int{502, 502, 502}, 3, 2},
		{"queued, crashed", true, func(uint64) map[uint16][]uint64 { return map[uint16][]uint64{2: {other}} },
			[]int{200, 200, 200}, 6, 0},
		{"queued, killed", false, func(uint64) map[uint16][]uint64 { return nil },
			[]int{200, 200, 200}, 6, 0},
	} {
		cfg := config.DefaultConfig()
		cfg.Limits.PoisonThreshold = 2
		p := &workProxy{}
		exited := func(socket string, _ time.Duration) (Exit, bool) {
			if socket != "infer.sock" {
				t.Fatalf("%s: asked for the exit of %q, want infer.sock", tc.name, socket)
			}
			return Exit{Crashed: tc.crashed, Read: true, Work: shm.AtWork{Units: tc.work(p.tokens[len(p.tokens)-1])}}, true
		}
		f := newRig(cfg, p, exited)
		var got []int
		for range 3 {
			p.dies = len(p.tokens) + 1 // this send's first try dies
			code, _, marked := send(f, cfg, "body")
			if marked {
				t.Fatalf("%s: the internal header reached the client", tc.name)
			}
			got = append(got, code)
		}
		if !slices.Equal(got, tc.want) || len(p.tokens) != tc.sent || p.alone != tc.alone {
			t.Errorf("%s: answers %v, %d sent (%d alone); want %v, %d sent (%d alone)", tc.name, got, len(p.tokens), p.alone, tc.want, tc.sent, tc.alone)
		}
		if len(p.tokens) > 1 && p.tokens[0] == p.tokens[len(p.tokens)-1] {
			t.Errorf("%s: two requests were sent with one token %d", tc.name, p.tokens[0])
		}
	}
}
