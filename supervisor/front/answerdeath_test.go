package front

import (
	"bufio"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestAnswerCutAfterItsHeaderGivesItsChargeBack: a worker that declares
// a 20 MiB answer, sends 64 KiB of it and dies (its body ends short, the
// connection closed) holds the charge its header took only while it
// sends: the client gets an error, not a short 200, and the budget is
// whole again.
func TestAnswerCutAfterItsHeaderGivesItsChargeBack(t *testing.T) {
	f := unreadAnswerFront(t, time.Minute)
	cut := make(chan struct{})
	upstream(t, f, func(ctx *fasthttp.RequestCtx) {
		ctx.SetBodyStream(&stalledBody{done: cut}, answerBytes)
	})
	cutOnce := func() {
		select {
		case <-cut:
		default:
			close(cut)
		}
	}
	t.Cleanup(cutOnce) // before the worker's shutdown waits on it
	c := f.dial(t)
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n1"); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code int
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			done <- answer{err: err}
			return
		}
		_, err = io.Copy(io.Discard, resp.Body)
		done <- answer{resp.StatusCode, err}
	}()
	pollFor(t, "the declared 20 MiB answer charged from its header", func() bool { return f.fr.adm.Bodies().InUse() == answerBytes })
	cutOnce() // the worker's body ends 20 MiB short: it closes the connection
	select {
	case a := <-done:
		if a.err == nil && a.code == fasthttp.StatusOK {
			t.Errorf("an answer cut 20 MiB short was answered 200, whole")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no answer 15 s after the worker cut its answer")
	}
	f.waitBudgetEmpty(t)
}
