package prep

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/schedule"
)

// TestDecodeIsRecordedAtWork: a request's decodes are recorded in the
// slot under the master's token, each a unit of its own, until they end;
// the token is passed on to the infer worker.
func TestDecodeIsRecordedAtWork(t *testing.T) {
	b, err := shm.Create(filepath.Join(t.TempDir(), "b"), 1, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set(worker.TokenHeader, "42")
	w := stopperFor(&ctx, b.Slot(0)).AtWork()
	if u, ok := b.AtWork(0).Unit(42); !ok || u != 42 {
		t.Fatalf("during the decode: unit %d, %v; want token 42 in a unit of its own", u, ok)
	}
	w.End()
	if a := b.AtWork(0); a.Units != nil {
		t.Fatalf("after the decode: %+v, want nothing at work", a)
	}
	if _, err := decodeV2(&ctx, v2.Limits{}, b.Slot(0)); err == nil {
		t.Fatal("an empty body decoded")
	}
	if a := b.AtWork(0); a.Units != nil {
		t.Fatalf("after a failed decode: %+v, want nothing at work", a)
	}
	var up fasthttp.Request
	schedule.Set(&up, &ctx.Request.Header, &v2.InferRequest{}, time.Second)
	if got := string(up.Header.Peek(worker.TokenHeader)); got != "42" {
		t.Errorf("token passed to the infer worker = %q, want 42", got)
	}
}
