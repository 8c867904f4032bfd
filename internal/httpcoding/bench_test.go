package httpcoding

import (
	"bytes"
	stdflate "compress/flate"
	stdgzip "compress/gzip"
	"io"
	"math"
	"strconv"
	"testing"
)

// The codings come from github.com/klauspost/compress, not the standard
// library's compress/*: same formats and API, faster on the prep worker's
// CPU. These benchmarks keep the comparison side by side in one run:
//
//	go test -run XXX -bench . -count 3 ./internal/httpcoding/

// jsonRequest is a V2 JSON request of n FP32 values, like the default
// model's 150,528.
func jsonRequest(n int) []byte {
	b := []byte(`{"inputs":[{"name":"input","shape":[1,3,224,224],"datatype":"FP32","data":[`)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, math.Sin(float64(i)*0.37)*2, 'g', -1, 32)
	}
	return append(b, "]}]}"...)
}

func BenchmarkInflateRequest(b *testing.B) {
	plain := jsonRequest(3 * 224 * 224)
	body := Compress(Gzip, plain)
	b.Run("stdlib", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		out := make([]byte, 0, len(plain)+1)
		for b.Loop() {
			r, err := stdgzip.NewReader(bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(r, out[:len(plain)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("httpcoding", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			if _, err := Decompress(Gzip, body, 64<<20, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCompressResponse(b *testing.B) {
	plain := jsonRequest(8000) // about an [8,1000] FP32 response
	b.Run("stdlib", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		w, _ := stdgzip.NewWriterLevel(nil, stdflate.BestSpeed)
		for b.Loop() {
			var out bytes.Buffer
			w.Reset(&out)
			_, _ = w.Write(plain)
			_ = w.Close()
		}
	})
	b.Run("httpcoding", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			Compress(Gzip, plain)
		}
	})
}
