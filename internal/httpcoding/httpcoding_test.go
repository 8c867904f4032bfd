package httpcoding

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"testing"
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

// unlimited reserves without bound, counting what it gave.
func counting(total *int) func(int) bool {
	return func(n int) bool { *total += n; return true }
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
		var reserved int
		got, err := Decompress(tc.c, tc.body, len(src), counting(&reserved))
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("%s: Decompress = %d bytes, %v; want the %d bytes back", name, len(got), err, len(src))
		}
		if reserved > len(src)+1+len(src)/2+firstChunk {
			t.Errorf("%s: reserved %d bytes for a %d-byte body", name, reserved, len(src))
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

// TestBombStopsAtLimit: 64 MiB of zeros compresses to about 64 KiB; with a
// 1 MiB limit the decoder stops there, having reserved at most limit+1.
func TestBombStopsAtLimit(t *testing.T) {
	zeros := make([]byte, 64<<20)
	const limit = 1 << 20
	for _, c := range []Coding{Gzip, Deflate} {
		bomb := Compress(c, zeros)
		var reserved int
		_, err := Decompress(c, bomb, limit, counting(&reserved))
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s bomb of %d bytes: err %v; want ErrTooLarge", c, len(bomb), err)
		}
		if reserved > limit+1 {
			t.Errorf("%s bomb: reserved %d bytes, more than the limit %d + 1", c, reserved, limit)
		}
	}
}

func TestBudgetRefused(t *testing.T) {
	body := Compress(Gzip, make([]byte, 1<<20))
	left := 100 << 10
	_, err := Decompress(Gzip, body, 2<<20, func(n int) bool {
		if n > left {
			return false
		}
		left -= n
		return true
	})
	if !errors.Is(err, ErrBudget) {
		t.Errorf("err %v; want ErrBudget once reserve refuses", err)
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
		_, err := Decompress(tc.c, tc.body, 1<<20, func(int) bool { return true })
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v; want ErrCorrupt", name, err)
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
	exact := stdGzip(make([]byte, 3<<20))
	reserved := 0
	if got, err := Decompress(Gzip, exact, 4<<20, counting(&reserved)); err != nil || len(got) != 3<<20 || reserved != 3<<20+1 {
		t.Errorf("an honest 3 MiB body: %d bytes, %v, %d reserved; want one buffer of 3 MiB + 1", len(got), err, reserved)
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
