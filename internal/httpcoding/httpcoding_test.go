package httpcoding

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/budget"
)

func TestParseContentEncoding(t *testing.T) {
	for v, want := range map[string]Coding{"": Identity, "identity": Identity, " gzip ": Gzip, "GZIP": Gzip,
		"x-gzip": Gzip, "deflate": Deflate, "Deflate": Deflate} {
		if c, err := ParseContentEncoding([]byte(v)); err != nil || c != want {
			t.Errorf("ParseContentEncoding(%q) = %v, %v; want %v", v, c, err, want)
		}
	}
	for _, v := range []string{"br", "zstd", "gzip, gzip", "gzip,deflate", "compress", "gzip;q=1"} {
		_, err := ParseContentEncoding([]byte(v))
		var ue *UnsupportedError
		if !errors.Is(err, ErrUnsupported) || !errors.As(err, &ue) || ue.Value != v {
			t.Errorf("ParseContentEncoding(%q) = %v; want an *UnsupportedError naming it", v, err)
		}
	}
}

func TestNegotiateAsTriton(t *testing.T) {
	for accept, want := range map[string]Coding{
		"":                          Identity,
		"gzip":                      Gzip,
		"deflate":                   Deflate,
		"gzip, deflate":             Gzip, // a tie: the first listed
		"deflate, gzip":             Deflate,
		"gzip;q=0.5, deflate":       Deflate,
		"gzip;q=0, identity;q=0.1":  Identity,
		"gzip;q=0":                  Identity,
		"br, zstd":                  Identity,
		"*":                         Identity, // not expanded, as in Triton
		"identity, gzip;q=0.9":      Identity,
		"gzip;q=bad, deflate;q=0.2": Deflate,
		" GZIP ; q=0.8 ":            Gzip,
	} {
		if got := Negotiate([]byte(accept)); got != want {
			t.Errorf("Negotiate(%q) = %v; want %v", accept, got, want)
		}
	}
}

// newCharge is a charge of held bytes in a lane of room bytes (0:
// unbounded) of a budget of its own: a Decompress under it may hold at
// most room - held at once.
func newCharge(t testing.TB, room, held int) *budget.Charge {
	if room == 0 {
		room = 1 << 40
	}
	l := &budget.Lane{Name: "decompressed bodies", Room: int64(room)}
	c, err := budget.New(l).Reserve(int64(held), l)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDecompressRoundTrip(t *testing.T) {
	src := bytes.Repeat([]byte(`{"inputs":[{"name":"x","data":[1.5,2.25]}]}`), 5000)
	raw := func() []byte {
		var b bytes.Buffer
		w, _ := flate.NewWriter(&b, flate.BestSpeed)
		w.Write(src)
		w.Close()
		return b.Bytes()
	}()
	for name, tc := range map[string]struct {
		c    Coding
		body []byte
	}{
		"gzip":          {Gzip, Compress(Gzip, src)},
		"deflate zlib":  {Deflate, Compress(Deflate, src)},
		"deflate raw":   {Deflate, raw},
		"stdlib gzip":   {Gzip, stdGzip(src)},
		"stdlib zlib":   {Deflate, stdZlib(src)},
		"identity":      {Identity, src},
		"gzip multiple": {Gzip, append(stdGzip(src[:100]), stdGzip(src[100:])...)},
	} {
		// Room for twice the body and a chunk, beside 10 bytes held before.
		b := newCharge(t, 10+2*len(src)+chunkSize+1, 10)
		got, err := Decompress(tc.c, tc.body, len(src), b)
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("%s: Decompress = %d bytes, %v; want the %d bytes back (peak at most twice plus a chunk)", name, len(got), err, len(src))
		}
		if tc.c != Identity && b.Bytes() != 10+int64(cap(got)) {
			t.Errorf("%s: holds %d (cap %d); want the 10 held before and cap", name, b.Bytes(), cap(got))
		}
	}
}

func stdGzip(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func stdZlib(b []byte) []byte {
	var out bytes.Buffer
	w := zlib.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// TestBombStopsAtLimit: 8 MiB of zeros compresses to about 8 KiB; with a
// 1 MiB limit the decoder stops there, having held at most the limit and
// one chunk, and holds nothing after.
func TestBombStopsAtLimit(t *testing.T) {
	zeros := make([]byte, 8<<20)
	const limit = 1 << 20
	for _, c := range []Coding{Gzip, Deflate} {
		bomb := Compress(c, zeros)
		b := newCharge(t, limit+chunkSize, 0) // the limit and a chunk: ErrBudget past them
		_, err := Decompress(c, bomb, limit, b)
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s bomb of %d bytes: err %v; want ErrTooLarge within the limit and a chunk", c, len(bomb), err)
		}
		if b.Bytes() != 0 {
			t.Errorf("%s bomb: %d still held after the error", c, b.Bytes())
		}
	}
}

func TestBudgetRefused(t *testing.T) {
	for _, c := range []Coding{Gzip, Deflate} {
		b := newCharge(t, 600<<10, 100)
		_, err := Decompress(c, Compress(c, make([]byte, 1<<20)), 2<<20, b)
		if !errors.Is(err, ErrBudget) || b.Bytes() != 100 {
			t.Errorf("%s: err %v, %d held; want ErrBudget once the budget refuses, the 100 held before", c, err, b.Bytes())
		}
	}
}

func TestCorrupt(t *testing.T) {
	good := Compress(Gzip, []byte("hello, world"))
	for name, tc := range map[string]struct {
		c    Coding
		body []byte
	}{
		"not gzip":          {Gzip, []byte("plain text")},
		"truncated gzip":    {Gzip, good[:len(good)-6]},
		"bad checksum":      {Gzip, append(append([]byte{}, good[:len(good)-8]...), 0, 0, 0, 0, 12, 0, 0, 0)},
		"not deflate":       {Deflate, []byte{0xff, 0xff, 0xff}},
		"trailing garbage":  {Gzip, append(append([]byte{}, good...), "junk"...)},
		"truncated deflate": {Deflate, Compress(Deflate, bytes.Repeat([]byte("ab"), 1000))[:10]},
	} {
		b := newCharge(t, 0, 0)
		_, err := Decompress(tc.c, tc.body, 1<<20, b)
		if !errors.Is(err, ErrCorrupt) || b.Bytes() != 0 {
			t.Errorf("%s: err %v, %d held; want ErrCorrupt, nothing held", name, err, b.Bytes())
		}
	}
}

func TestCompressReadable(t *testing.T) {
	src := []byte(`{"outputs":[{"name":"y","datatype":"FP32","shape":[1,1],"data":[0.5]}]}`)
	r, err := gzip.NewReader(bytes.NewReader(Compress(Gzip, src)))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(r); !bytes.Equal(got, src) {
		t.Errorf("gzip round trip through the stdlib reader: %q", got)
	}
	zr, err := zlib.NewReader(bytes.NewReader(Compress(Deflate, src)))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(zr); !bytes.Equal(got, src) {
		t.Errorf("deflate (zlib) round trip: %q", got)
	}
}

// TestGzipTrailerSizesTheBuffer: an honest gzip body is inflated into one
// buffer of the size its trailer declares.
func TestGzipTrailerSizesTheBuffer(t *testing.T) {
	plain := jsonRequest(200000)       // about 3:1, as real tensors
	b := newCharge(t, len(plain)+1, 0) // room for one buffer of the body and a byte
	if got, err := Decompress(Gzip, stdGzip(plain), 4<<20, b); err != nil || !bytes.Equal(got, plain) || b.Bytes() != int64(len(plain))+1 {
		t.Errorf("an honest body: %d bytes, %v, %d held; want one buffer of %d + 1", len(got), err, b.Bytes(), len(plain))
	}
	// A trailer declaring far more than the body could honestly hold is
	// not trusted: chunks, not one buffer of the declared size.
	zeros := stdGzip(make([]byte, 3<<20))
	if got, err := Decompress(Gzip, zeros, 4<<20, newCharge(t, 0, 0)); err != nil || len(got) != 3<<20 {
		t.Errorf("3 MiB of zeros (1:1000): %d bytes, %v; want them", len(got), err)
	}
	if _, err := Decompress(Gzip, zeros, 4<<20, newCharge(t, 3<<20+1, 0)); !errors.Is(err, ErrBudget) {
		t.Errorf("3 MiB of zeros in room for one buffer of them: %v; want ErrBudget (inflated in chunks, then copied)", err)
	}
}

// TestDecompressPrefix: the first bytes of a compressed body give the
// first bytes of the plain one, however the stream is cut; garbage is
// ErrCorrupt.
func TestDecompressPrefix(t *testing.T) {
	plain := bytes.Repeat([]byte(`{"inputs":[{"name":"x","data":[1,2,3]}]}`), 10000)
	for _, c := range []Coding{Gzip, Deflate, Identity} {
		body := Compress(c, plain)
		for _, cut := range []int{0, 1, 5, 11, len(body) / 3, len(body)} {
			got, err := DecompressPrefix(c, body[:cut], 4096)
			if err != nil || len(got) > 4096 || !bytes.HasPrefix(plain, got) {
				t.Errorf("%s cut at %d: %d bytes, %v; want a prefix of the plain body, at most 4096 bytes", c, cut, len(got), err)
			}
			if cut == len(body) && len(got) != 4096 {
				t.Errorf("%s whole body: %d bytes; want 4096", c, len(got))
			}
		}
	}
	if _, err := DecompressPrefix(Gzip, []byte("this is not gzip at all"), 100); !errors.Is(err, ErrCorrupt) {
		t.Errorf("garbage: %v; want ErrCorrupt", err)
	}
}
