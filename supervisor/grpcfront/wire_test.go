package grpcfront

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// ledger is a Budget that records what is reserved (+n) and released
// (-n), and refuses what goes past limit (0: no limit).
type ledger struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	events  []string
	refused int
}

func (l *ledger) ReserveBody(n int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limit > 0 && l.used+n > l.limit {
		l.refused++
		return false
	}
	l.used += n
	l.events = append(l.events, fmt.Sprintf("+%d", n))
	return true
}

func (l *ledger) ReserveAnswer(n int64) bool { return l.ReserveBody(n) }
func (l *ledger) ReleaseAnswer(n int64)      { l.ReleaseBody(n) }

func (l *ledger) ReleaseBody(n int64) {
	if n == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.used -= n
	l.events = append(l.events, fmt.Sprintf("-%d", n))
}

func (l *ledger) log() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.events, " ")
}

func (l *ledger) inUse() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.used
}

func (l *ledger) refusals() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

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
		}, "+7 +2 -2 -7"},
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
	l := &ledger{}
	w := newWire(l, wireMax, time.Second, nil)
	for _, r := range runs {
		if err := w.read(r); err != nil {
			t.Fatal(err)
		}
	}
	if l.inUse() != 0 {
		t.Fatalf("%d bytes still charged after %q", l.inUse(), l.log())
	}
	return l.log()
}

// A message in assembly is given back when the server ends its stream
// (trailers, reset) or the connection closes, and a stream the server
// ended is charged no more.
func TestWireReleasesOnServerEndAndClose(t *testing.T) {
	l := &ledger{}
	w := newWire(l, wireMax, time.Second, nil)
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
	if got, want := l.log(), "+10 +20 +30 -10 -20"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	w.close()
	if l.inUse() != 0 || w.read([]byte{0}) == nil {
		t.Fatalf("after close: %d bytes charged (%q), and reads go on", l.inUse(), l.log())
	}
}

// The server's last GOAWAY gives back the streams past the last one it
// keeps, and no stream past it is charged: gRPC ignores them.
func TestWireGoAwayEndsTheStreamsPastIt(t *testing.T) {
	l := &ledger{}
	w := newWire(l, wireMax, time.Second, nil)
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
	if got, want := l.log(), "+10 +20 +30 -30"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	w.close()
	if l.inUse() != 0 {
		t.Fatalf("after close: %d bytes charged (%q)", l.inUse(), l.log())
	}
}

// A prefix that does not fit is owed: the read goes on, and the next
// one waits (await) until it fits, or fails once the wait passes.
func TestWireWaitsForRoom(t *testing.T) {
	l := &ledger{limit: wireMax}
	if !l.ReserveBody(wireMax) {
		t.Fatal("the ledger refused its limit")
	}
	w := newWire(l, wireMax, 20*time.Second, nil)
	p := clientBytes(t, func(f *http2.Framer) error {
		return errors.Join(headers(f, 1, false), f.WriteData(1, false, msg(10, 0)[:6]))
	})
	if err := w.read(p); err != nil || l.inUse() != wireMax {
		t.Fatalf("the read: %v, %d charged, want nil and the budget's %d", err, l.inUse(), wireMax)
	}
	awaited := make(chan error, 1)
	go func() { awaited <- w.await() }()
	polltest.Until(t, 10*time.Second, time.Millisecond, "the next read waiting for room", func() bool { return l.refusals() > 1 })
	select {
	case err := <-awaited:
		t.Fatalf("the wait returned %v with the budget full", err)
	default:
	}
	l.ReleaseBody(wireMax)
	if err := <-awaited; err != nil || l.inUse() != 10 {
		t.Fatalf("the wait after room was made: %v, %d charged, want 10", err, l.inUse())
	}

	full := &ledger{limit: 1}
	w = newWire(full, wireMax, 50*time.Millisecond, nil)
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
	full := &ledger{limit: 1}
	w := newWire(full, wireMax, time.Minute, nil)
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
		if err != nil || full.inUse() != 0 {
			t.Fatalf("the wait: %v, %d charged, want nil and 0", err, full.inUse())
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
		l := &ledger{limit: wireMax} // the first 15 reads' messages fit; later ones wait for room, or close
		w := newWire(l, wireMax, time.Minute, nil)
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
		if l.inUse() != 0 || w.read([]byte{0}) == nil {
			t.Fatalf("closed after %d reads: %d bytes charged (%q), or reads go on", closeAfter, l.inUse(), l.log())
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
	l := &ledger{}
	w := newWire(l, 8<<20, time.Second, nil)
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
		l.events = l.events[:0] // each round charges and gives back the message again
	}
}
