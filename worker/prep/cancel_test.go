package prep

import (
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/imageinput"
)

// clock is a fake time source that moves one second per reading and
// counts readings: the stopper reads it once per image, before decoding.
type clock struct {
	t     time.Time
	reads int
}

func (c *clock) now() time.Time { c.reads++; c.t = c.t.Add(time.Second); return c.t }

// TestDecodingStopsAtTheDeadline: a request whose deadline passes while
// its images are decoded stops at the next image.
func TestDecodingStopsAtTheDeadline(t *testing.T) {
	im, err := imageinput.New(imageModel(tensor.FP32, -1, 3, 4, 4), &worker.ImageInput{MaxImages: 8})
	if err != nil {
		t.Fatal(err)
	}
	img := encodePNG(t, 6, 5)
	c := &clock{t: time.Unix(1000, 0)}
	// Checks at 1001, 1002 (go on), 1003 (past 1002.5: stop).
	_, err = im.Tensors([][]byte{img, img, img, img, img}, stopper{deadline: time.Unix(1002, 5e8), now: c.now})
	var se *imageinput.StoppedError
	if !errors.As(err, &se) || se.Decoded != 2 || se.Total != 5 || !errors.Is(err, errDeadlinePassed) || c.reads != 3 {
		t.Fatalf("tensors = %v (%+v), clock read %d times; want a stop after 2 of 5 images", err, se, c.reads)
	}
	if _, err := im.Tensors([][]byte{img, img}, stopper{deadline: time.Unix(1e9, 0), now: c.now}); err != nil {
		t.Fatalf("before the deadline: %v", err)
	}
}

// TestStopperReadsTheDeadlineHeader: the master passes the client's
// deadline in worker.DeadlineHeader.
func TestStopperReadsTheDeadlineHeader(t *testing.T) {
	var ctx fasthttp.RequestCtx
	if err := stopperFor(&ctx, nil).Check(); err != nil {
		t.Errorf("no deadline: %v", err)
	}
	ctx.Request.Header.Set(worker.DeadlineHeader, strconv.FormatInt(time.Now().Add(time.Hour).UnixNano(), 10))
	if err := stopperFor(&ctx, nil).Check(); err != nil {
		t.Errorf("deadline in an hour: %v", err)
	}
	ctx.Request.Header.Set(worker.DeadlineHeader, strconv.FormatInt(time.Now().Add(-time.Millisecond).UnixNano(), 10))
	if err := stopperFor(&ctx, nil).Check(); !errors.Is(err, errDeadlinePassed) {
		t.Errorf("deadline passed: %v", err)
	}
}

// TestStopperSeesTheMasterHangUp serves a request on a real Unix socket:
// while the client's connection is open the stopper goes on; once the
// client closes it, the handler still running sees errClientGone.
func TestStopperSeesTheMasterHangUp(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	started, hungUp, result := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		s := stopperFor(ctx, nil)
		started <- s.Check()
		<-hungUp
		// The close travels through the kernel: poll, bounded.
		var err error
		polltest.Wait(10*time.Second, time.Millisecond, func() bool { err = s.Check(); return err != nil })
		result <- err
	}}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
	defer srv.Shutdown()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("POST /v2/models/m/infer HTTP/1.1\r\nHost: p\r\nContent-Length: 0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("with the connection open: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the handler")
	}
	conn.Close()
	close(hungUp)
	select {
	case err := <-result:
		if !errors.Is(err, errClientGone) {
			t.Fatalf("after the client hung up: %v, want errClientGone", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the handler never finished")
	}
}
