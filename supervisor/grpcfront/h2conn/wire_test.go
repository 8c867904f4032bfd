package h2conn

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/internal/budget/budgettest"
	"github.com/supervisor-dev/supervisor/internal/hostile"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// clientBytes is what a client writes: the preface, then frames.
func clientBytes(t *testing.T, frames func(f *http2.Framer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(http2.ClientPreface)
	f := http2.NewFramer(&b, nil)
	f.AllowIllegalWrites = true // padding that is not zeros
	if err := frames(f); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func msg(n int, fill byte) []byte {
	return append(hostile.MessagePrefix(uint32(n)), bytes.Repeat([]byte{fill}, n)...)
}

// headers opens stream id with a header block the scanner never reads.
func headers(f *http2.Framer, id uint32, end bool) error {
	return f.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte{0, 0, 0, 0, 5}, EndHeaders: true, EndStream: end})
}

const wireMax = 1000

// The scanner's reservations and releases for each byte stream, split
// in two at every offset and read a byte at a time: the same whatever
// the reads.
func TestWireChargesDeclaredLengths(t *testing.T) {
	m7 := msg(7, 0)
	cases := []struct {
		name   string
		frames func(f *http2.Framer) error
		want   string
	}{
		{"prefix across frames", func(f *http2.Framer) error {
			return errors.Join(headers(f, 1, false), f.WriteData(1, false, m7[:3]), f.WriteData(1, false, m7[3:9]), f.WriteData(1, true, m7[9:]))
		}, "+7 -7"},
		{"padded frames", func(f *http2.Framer) error {
			// The padding looks like a prefix of 255: it is not a message byte.
			pad := hostile.MessagePrefix(255)
			return errors.Join(headers(f, 1, false), f.WriteDataPadded(1, false, m7[:4], pad), f.WriteDataPadded(1, false, m7[4:], pad),
				f.WriteDataPadded(1, false, nil, pad), f.WriteDataPadded(1, true, msg(2, 0), pad))
		}, "+7 -7 +2 -2"},
		{"several messages in one frame", func(f *http2.Framer) error {
			return errors.Join(headers(f, 1, false), f.WriteData(1, false, slices.Concat(msg(3, 1), msg(0, 0), msg(4, 2), m7[:6])), f.WriteData(1, true, m7[6:]))
		}, "+3 -3 +4 -4 +7 -7"},
		{"END_STREAM mid-message", func(f *http2.Framer) error {
			return errors.Join(headers(f, 1, false), f.WriteData(1, true, m7[:8]))
		}, "+7 -7"},
		{"RST_STREAM mid-message", func(f *http2.Framer) error {
			return errors.Join(headers(f, 1, false), f.WriteData(1, false, m7[:8]), f.WriteRSTStream(1, http2.ErrCodeCancel), f.WriteData(1, false, msg(9, 0)))
		}, "+7 -7"},
		{"trailers mid-message", func(f *http2.Framer) error {
			return errors.Join(headers(f, 1, false), f.WriteData(1, false, m7[:8]), headers(f, 1, true))
		}, "+7 -7"},
		{"CONTINUATION and other frames skipped", func(f *http2.Framer) error {
			return errors.Join(f.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: msg(5, 0)}),
				f.WriteContinuation(1, true, msg(6, 0)), f.WritePing(false, [8]byte{0, 0, 0, 0, 9}),
				f.WriteWindowUpdate(0, 100), f.WriteData(1, true, m7))
		}, "+7 -7"},
		{"over the largest message: uncharged, passed over", func(f *http2.Framer) error {
			return errors.Join(headers(f, 1, false), f.WriteData(1, false, msg(wireMax+1, 0)), f.WriteData(1, true, m7))
		}, "+7 -7"},
		{"streams interleaved", func(f *http2.Framer) error {
			return errors.Join(headers(f, 1, false), headers(f, 3, false), f.WriteData(1, false, m7[:6]), f.WriteData(3, false, msg(2, 0)[:6]),
				f.WriteData(3, true, msg(2, 0)[6:]), f.WriteData(1, true, m7[6:]))
		}, "+7 +2 -7 -2"}, // -2 came first: the log lists releases in the order charged
		{"a stream never opened", func(f *http2.Framer) error { return f.WriteData(5, true, m7) }, ""},
		{"a stream its HEADERS ended", func(f *http2.Framer) error {
			return errors.Join(headers(f, 1, true), f.WriteData(1, true, m7))
		}, ""},
		{"HEADERS padded, with a priority", func(f *http2.Framer) error {
			return errors.Join(f.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: msg(5, 0), EndHeaders: true,
				PadLength: 9, Priority: http2.PriorityParam{StreamDep: 3, Weight: 7}}), f.WritePriority(1, http2.PriorityParam{Weight: 1}),
				f.WriteData(1, true, m7))
		}, "+7 -7"},
		{"an unknown frame type that looks like DATA", func(f *http2.Framer) error {
			return errors.Join(headers(f, 1, false), f.WriteRawFrame(0xfa, 0, 1, msg(9, 0)), f.WriteData(1, true, m7))
		}, "+7 -7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := clientBytes(t, c.frames)
			for i := 0; i <= len(p); i++ {
				if got := scanLedger(t, p[:i], p[i:]); got != c.want {
					t.Fatalf("split at %d of %d: %q, want %q", i, len(p), got, c.want)
				}
			}
			var bytewise [][]byte
			for i := range p {
				bytewise = append(bytewise, p[i:i+1])
			}
			if got := scanLedger(t, bytewise...); got != c.want {
				t.Fatalf("a byte at a time: %q, want %q", got, c.want)
			}
		})
	}
}

// scanLedger reads the runs through a new wire and returns its ledger;
// nothing may stay charged.
func scanLedger(t *testing.T, runs ...[]byte) string {
	t.Helper()
	l := &budgettest.Ledger{}
	w := NewWire(l, wireMax, time.Second)
	for _, r := range runs {
		if err := w.read(r); err != nil {
			t.Fatal(err)
		}
	}
	if l.InUse() != 0 {
		t.Fatalf("%d bytes still charged after %q", l.InUse(), l.Log())
	}
	return l.Log()
}

// A message in assembly is given back when the server ends its stream
// (trailers, reset) or the connection closes, and a stream the server
// ended is charged no more.
func TestWireReleasesOnServerEndAndClose(t *testing.T) {
	l := &budgettest.Ledger{}
	w := NewWire(l, wireMax, time.Second)
	read := func(frames func(f *http2.Framer) error) {
		t.Helper()
		var b bytes.Buffer
		if err := frames(http2.NewFramer(&b, nil)); err != nil {
			t.Fatal(err)
		}
		if err := w.read(b.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.read([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	read(func(f *http2.Framer) error {
		return errors.Join(headers(f, 1, false), headers(f, 3, false), headers(f, 5, false),
			f.WriteData(1, false, msg(10, 0)[:7]), f.WriteData(3, false, msg(20, 0)[:7]), f.WriteData(5, false, msg(30, 0)[:7]))
	})
	var out bytes.Buffer
	sf := http2.NewFramer(&out, nil)
	if err := errors.Join(sf.WriteSettings(), sf.WriteRSTStream(1, http2.ErrCodeCancel),
		sf.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: []byte{0x88}, EndHeaders: true, EndStream: true})); err != nil {
		t.Fatal(err)
	}
	for i := range out.Len() { // the server's writes split anywhere too
		w.wrote(out.Bytes()[i : i+1])
	}
	read(func(f *http2.Framer) error { return f.WriteData(1, false, msg(40, 0)[:5]) })
	if got, want := l.Log(), "+10 +20 +30 -10 -20"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	w.close()
	if l.InUse() != 0 || w.read([]byte{0}) == nil {
		t.Fatalf("after close: %d bytes charged (%q), and reads go on", l.InUse(), l.Log())
	}
}

// The server's last GOAWAY gives back the streams past the last one it
// keeps, and no stream past it is charged: gRPC ignores them.
func TestWireGoAwayEndsTheStreamsPastIt(t *testing.T) {
	l := &budgettest.Ledger{}
	w := NewWire(l, wireMax, time.Second)
	if err := w.read(clientBytes(t, func(f *http2.Framer) error {
		return errors.Join(headers(f, 1, false), headers(f, 3, false), headers(f, 5, false),
			f.WriteData(1, false, msg(10, 0)[:7]), f.WriteData(3, false, msg(20, 0)[:7]), f.WriteData(5, false, msg(30, 0)[:7]))
	})); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sf := http2.NewFramer(&out, nil)
	if err := errors.Join(sf.WriteGoAway(1<<31-1, http2.ErrCodeNo, nil), sf.WritePing(false, [8]byte{1, 2, 3, 4}),
		sf.WriteGoAway(3, http2.ErrCodeNo, []byte("draining"))); err != nil {
		t.Fatal(err)
	}
	for i := range out.Len() {
		w.wrote(out.Bytes()[i : i+1])
	}
	var more bytes.Buffer
	cf := http2.NewFramer(&more, nil)
	if err := errors.Join(headers(cf, 7, false), cf.WriteData(7, false, msg(40, 0)[:7])); err != nil {
		t.Fatal(err)
	}
	if err := w.read(more.Bytes()); err != nil {
		t.Fatal(err)
	}
	if got, want := l.Log(), "+10 +20 +30 -30"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	w.close()
	if l.InUse() != 0 {
		t.Fatalf("after close: %d bytes charged (%q)", l.InUse(), l.Log())
	}
}

// A prefix that does not fit is owed: the read goes on, and the next
// one waits (await) until it fits, or fails once the wait passes.
func TestWireWaitsForRoom(t *testing.T) {
	l := &budgettest.Ledger{Limit: wireMax}
	full, err := l.ReserveBody(wireMax)
	if err != nil {
		t.Fatalf("the ledger refused its limit: %v", err)
	}
	w := NewWire(l, wireMax, 20*time.Second)
	p := clientBytes(t, func(f *http2.Framer) error {
		return errors.Join(headers(f, 1, false), f.WriteData(1, false, msg(10, 0)[:6]))
	})
	if err := w.read(p); err != nil || l.InUse() != wireMax {
		t.Fatalf("the read: %v, %d charged, want nil and the budget's %d", err, l.InUse(), wireMax)
	}
	awaited := make(chan error, 1)
	go func() { awaited <- w.await() }()
	polltest.Until(t, 10*time.Second, time.Millisecond, "the next read waiting for room", func() bool { return l.Waiting() == 1 })
	select {
	case err := <-awaited:
		t.Fatalf("the wait returned %v with the budget full", err)
	default:
	}
	full.Release()
	if err := <-awaited; err != nil || l.InUse() != 10 {
		t.Fatalf("the wait after room was made: %v, %d charged, want 10", err, l.InUse())
	}

	none := &budgettest.Ledger{Limit: wireMax}
	if _, err := none.ReserveBody(wireMax); err != nil {
		t.Fatal(err)
	}
	w = NewWire(none, wireMax, 50*time.Millisecond)
	start := time.Now()
	if err := errors.Join(w.read(p), w.await()); !errors.Is(err, errNoRoom) {
		t.Fatalf("with no room: %v, want errNoRoom", err)
	}
	if took := time.Since(start); took < 50*time.Millisecond || took > 10*time.Second {
		t.Errorf("the wait failed after %v, want the 50ms wait", took)
	}
}

// A stream that ends while its message is owed (the server refusing it
// at its header, mostly), or whose message ends within the read, owes
// nothing: the next read does not wait.
func TestWireDebtsEndWithTheirStream(t *testing.T) {
	full := &budgettest.Ledger{Limit: 1}
	w := NewWire(full, wireMax, time.Minute)
	if err := w.read(clientBytes(t, func(f *http2.Framer) error {
		return errors.Join(headers(f, 1, false), f.WriteData(1, false, msg(10, 0)[:6]), headers(f, 3, false), f.WriteData(3, false, msg(10, 0)))
	})); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := http2.NewFramer(&out, nil).WriteRSTStream(1, http2.ErrCodeRefusedStream); err != nil {
		t.Fatal(err)
	}
	w.wrote(out.Bytes())
	done := make(chan error, 1)
	go func() { done <- w.await() }()
	select {
	case err := <-done:
		if err != nil || full.InUse() != 0 {
			t.Fatalf("the wait: %v, %d charged, want nil and 0", err, full.InUse())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the next read waits for streams that owe nothing")
	}
}

// The connection's reader, gRPC's writer and Close race: whatever the
// order, once the connection is closed nothing stays charged, and reads
// fail.
func TestWireReadWriteCloseRace(t *testing.T) {
	in := clientBytes(t, func(f *http2.Framer) error {
		var errs []error
		for id := uint32(1); id < 200; id += 2 {
			errs = append(errs, headers(f, id, false), f.WriteData(id, false, msg(int(id)%wireMax, 0)[:7]))
		}
		return errors.Join(errs...)
	})
	var out bytes.Buffer
	sf := http2.NewFramer(&out, nil)
	for id := uint32(1); id < 200; id += 4 {
		if err := sf.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
			t.Fatal(err)
		}
	}
	if err := sf.WriteGoAway(101, http2.ErrCodeNo, nil); err != nil {
		t.Fatal(err)
	}
	for closeAfter := range 8 {
		l := &budgettest.Ledger{Limit: wireMax} // the first 15 reads' messages fit; later ones wait for room, or close
		w := NewWire(l, wireMax, time.Minute)
		var wg sync.WaitGroup
		wg.Add(2)
		reads := make(chan struct{}, len(in))
		go func() { // the reader: await, then a read, as rpcConn.Read
			defer wg.Done()
			for i := 0; i < len(in); i += 64 {
				if w.await() != nil || w.read(in[i:min(i+64, len(in))]) != nil {
					return
				}
				reads <- struct{}{}
			}
		}()
		go func() { // gRPC's writer
			defer wg.Done()
			for i := 0; i < out.Len(); i += 5 {
				w.wrote(out.Bytes()[i:min(i+5, out.Len())])
			}
		}()
		for range closeAfter {
			<-reads
		}
		w.close()
		wg.Wait()
		if l.InUse() != 0 || w.read([]byte{0}) == nil {
			t.Fatalf("closed after %d reads: %d bytes charged (%q), or reads go on", closeAfter, l.InUse(), l.Log())
		}
	}
}

// The scanner's cost on a connection's reads: 4 MiB messages in 16 KiB
// DATA frames, read 32 KiB at a time (grpc-go's read buffer).
func BenchmarkWireRead(b *testing.B) {
	var buf bytes.Buffer
	f := http2.NewFramer(&buf, nil)
	m := msg(4<<20, 1)
	if err := headers(f, 1, false); err != nil {
		b.Fatal(err)
	}
	for len(m) > 0 {
		k := min(len(m), 16<<10)
		if err := f.WriteData(1, false, m[:k]); err != nil {
			b.Fatal(err)
		}
		m = m[k:]
	}
	p := buf.Bytes()
	l := &budgettest.Ledger{}
	w := NewWire(l, 8<<20, time.Second)
	if err := w.read([]byte(http2.ClientPreface)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		for i := 0; i < len(p); i += 32 << 10 {
			if err := w.read(p[i:min(i+32<<10, len(p))]); err != nil {
				b.Fatal(err)
			}
		}
		l.ClearLog() // each round charges and gives back the message again
	}
}

// oweWire is a wire of b that owes a message of n bytes on stream 1,
// its first 6 bytes read, and awaits room for it in the background.
func oweWire(t *testing.T, b *budgettest.Ledger, n int) (*Wire, <-chan error) {
	t.Helper()
	w := NewWire(b, wireMax, time.Minute)
	if err := w.read(clientBytes(t, func(f *http2.Framer) error {
		return errors.Join(headers(f, 1, false), f.WriteData(1, false, msg(n, 0)[:6]))
	})); err != nil {
		t.Fatal(err)
	}
	waiting := b.Waiting()
	awaited := make(chan error, 1)
	go func() { awaited <- w.await() }()
	polltest.Until(t, 10*time.Second, time.Millisecond, "the message waiting for room", func() bool { return b.Waiting() == waiting+1 })
	return w, awaited
}

// Messages waiting for room on different connections enter in the order
// they came; a connection that closes while its message waits (its
// client gone, the server stopping) gives its turn back, holding
// nothing, and the next one enters rather than wait behind a
// connection that is no more; a stream that ends while its message
// waits gives its turn back the same way.
func TestWireWaitsInOrderAndGivesItsTurnBack(t *testing.T) {
	b := &budgettest.Ledger{Limit: wireMax}
	full, err := b.ReserveBody(wireMax)
	if err != nil {
		t.Fatal(err)
	}
	first, firstDone := oweWire(t, b, 500)
	second, secondDone := oweWire(t, b, 600)
	third, thirdDone := oweWire(t, b, 300)
	first.close()
	if err := <-firstDone; !errors.Is(err, errWireClosed) {
		t.Fatalf("the closed connection's wait: %v, want errWireClosed", err)
	}
	var out bytes.Buffer
	if err := http2.NewFramer(&out, nil).WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	third.wrote(out.Bytes()) // the server resets the third's stream
	if err := <-thirdDone; err != nil {
		t.Fatalf("the wait of a stream that ended: %v, want nil (it owes nothing)", err)
	}
	if n := b.Waiting(); n != 1 {
		t.Fatalf("%d waiting, want the second only", n)
	}
	full.Release()
	if err := <-secondDone; err != nil || b.InUse() != 600 {
		t.Fatalf("the second's wait: %v, %d charged, want nil and its 600", err, b.InUse())
	}
	second.close()
	third.close()
	if b.InUse() != 0 || b.Waiting() != 0 {
		t.Fatalf("after every close: %d charged, %d waiting", b.InUse(), b.Waiting())
	}
}

// A message the budget could never hold (a budget smaller than the
// largest message) fails the wait at once, saying so, holding nothing.
func TestWireMessageThatNeverFits(t *testing.T) {
	b := &budgettest.Ledger{Limit: 100}
	w := NewWire(b, wireMax, time.Minute)
	if err := w.read(clientBytes(t, func(f *http2.Framer) error {
		return errors.Join(headers(f, 1, false), f.WriteData(1, false, msg(500, 0)[:6]))
	})); err != nil {
		t.Fatal(err)
	}
	err := w.await()
	if !errors.Is(err, budget.ErrTooLarge) || !strings.Contains(err.Error(), "could never fit") || b.InUse() != 0 || b.Waiting() != 0 {
		t.Fatalf("the wait: %v, %d charged, %d waiting; want a TooLargeError that says so, nothing held", err, b.InUse(), b.Waiting())
	}
	w.close()
}
