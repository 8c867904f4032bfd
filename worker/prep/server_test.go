package prep

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestIdleConnectionsHoldNoBuffers: keep-alive connections that each
// brought a 600 KiB body to a server at limits.max_header_bytes' largest
// (a 1 MiB + 4 KiB read buffer), then went idle, as the master's pool
// keeps them, hold no buffers. With fasthttp's default each held its
// read buffer and its body: 64 of them about 100 MiB of live heap.
func TestIdleConnectionsHoldNoBuffers(t *testing.T) {
	const conns, bodySize, limit = 64, 600 << 10, 16 << 20
	spec := &worker.Spec{MaxHeaderBytes: 1 << 20, MaxBodyBytes: 4 << 20}
	srv := newServer(spec, func(ctx *fasthttp.RequestCtx) {
		fmt.Fprintf(ctx, "%d", len(ctx.PostBody()))
	}, func(*fasthttp.RequestCtx, error) {}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)     //nolint:errcheck // ends with Shutdown
	defer srv.Shutdown() //nolint:errcheck
	head := fmt.Sprintf("POST /v2/models/m/infer HTTP/1.1\r\nHost: prep\r\nContent-Length: %d\r\n\r\n", bodySize)
	req := append([]byte(head), make([]byte, bodySize)...)
	base := liveHeap()
	for i := 0; i < conns; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := roundTrip(t, c, req); got != fmt.Sprint(bodySize) {
			t.Fatalf("connection %d: the server read %q bytes, want %d", i, got, bodySize)
		}
	}
	var held uint64
	if !polltest.Wait(5*time.Second, 50*time.Millisecond, func() bool {
		held = max(liveHeap(), base) - base
		return held < limit
	}) {
		t.Fatalf("%d idle connections hold %d bytes of live heap, want under %d: each keeps its read buffer or its body", conns, held, limit)
	}
	t.Logf("%d idle connections hold %d bytes of live heap", conns, held)
}

// roundTrip sends req on c and returns the answer's body, leaving c open.
func roundTrip(t *testing.T, c net.Conn, req []byte) string {
	t.Helper()
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// liveHeap is the heap in use after two collections: the second empties
// the sync.Pools' victim caches, where released buffers wait.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
