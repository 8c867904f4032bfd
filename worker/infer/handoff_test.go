package infer

import (
	"errors"
	"os"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/arena"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestUnopenableArenaIsRefusedForResend: a request naming an arena this
// worker cannot open (here a real descriptor of a regular file, which
// arena.Open refuses: not a sealed memfd) is answered 503 with
// worker.ArenaRefusedHeader, the mark that tells the prep worker to send
// it again inline; nothing is mapped. A malformed descriptor is still a
// plain 400.
func TestUnopenableArenaIsRefusedForResend(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "not-an-arena")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 16); err != nil {
		t.Fatal(err)
	}
	ref := arena.Ref{PID: os.Getpid(), FD: int(f.Fd()), Token: 1}
	s := &server{}
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set(worker.ArenaHeader, ref.String())
	ctx.Request.Header.Set(worker.SlotHeader, arena.SlotDescriptor(arena.Ticket{Slot: 0, Seq: 1}, 8))
	_, err = s.frame(&ctx)
	if !errors.Is(err, arena.ErrNotSealed) {
		t.Fatalf("frame of a regular file's descriptor: %v, want arena.ErrNotSealed", err)
	}
	refuseFrame(&ctx, err)
	if ctx.Response.StatusCode() != fasthttp.StatusServiceUnavailable || len(ctx.Response.Header.Peek(worker.ArenaRefusedHeader)) == 0 {
		t.Fatalf("unopenable arena answered %d (refused header %q), want 503 with %s",
			ctx.Response.StatusCode(), ctx.Response.Header.Peek(worker.ArenaRefusedHeader), worker.ArenaRefusedHeader)
	}
	if n := len(s.arenas.mapped); n != 0 {
		t.Fatalf("%d arenas mapped after a refusal", n)
	}

	var bad fasthttp.RequestCtx
	bad.Request.Header.Set(worker.ArenaHeader, "not-a-ref")
	_, err = s.frame(&bad)
	refuseFrame(&bad, err)
	if bad.Response.StatusCode() != fasthttp.StatusBadRequest || len(bad.Response.Header.Peek(worker.ArenaRefusedHeader)) != 0 {
		t.Fatalf("malformed arena descriptor answered %d (refused header %q), want a plain 400",
			bad.Response.StatusCode(), bad.Response.Header.Peek(worker.ArenaRefusedHeader))
	}
}
