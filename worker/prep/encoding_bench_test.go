package prep

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/httpcoding"
	"github.com/supervisor-dev/supervisor/internal/imageprep"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// What compression costs a prep worker's CPU, side by side with the work
// the request costs anyway (go test -bench 'Codings|ResponseCompression'
// ./worker/prep/): each request benchmark is decompress + decode, each
// response one JSON encode + compress, with identity as the baseline.

// readOrSkip reads a shared test file, or skips without it.
func readOrSkip(b *testing.B, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("%s not there (make setup / ../shared/testdata): %v", path, err)
	}
	return data
}

// BenchmarkRequestCodings: the default model's JSON request (150,528
// FP32 values, models/default.request.json) decoded by the V2 decoder,
// and a real photo (ortex_goldfish.jpg) preprocessed to SqueezeNet's input,
// each sent as identity, gzip and deflate.
func BenchmarkRequestCodings(b *testing.B) {
	cases := []struct {
		name   string
		path   string
		decode func(b *testing.B, body []byte)
	}{
		{"default-json", filepath.Join("..", "..", "models", "default.request.json"), func(b *testing.B, body []byte) {
			if _, err := v2.DecodeInferRequest(body, -1); err != nil {
				b.Fatal(err)
			}
		}},
		{"photo-jpeg", filepath.Join("..", "..", "..", "shared", "testdata", "images", "ortex_goldfish.jpg"), photoDecoder()},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			plain := readOrSkip(b, c.path)
			for _, coding := range []httpcoding.Coding{httpcoding.Identity, httpcoding.Gzip, httpcoding.Deflate} {
				body := httpcoding.Compress(coding, plain)
				b.Run(coding.String(), func(b *testing.B) {
					b.SetBytes(int64(len(plain)))
					for b.Loop() {
						raw, err := httpcoding.Decompress(coding, body, 64<<20, newBodyDecoder(64<<20).charge())
						if err != nil {
							b.Fatal(err)
						}
						c.decode(b, raw)
					}
					b.ReportMetric(float64(len(body))/float64(len(plain)), "wire/plain")
				})
			}
		})
	}
}

// photoDecoder preprocesses a photo as the shared SqueezeNet wants it.
func photoDecoder() func(b *testing.B, body []byte) {
	cfg := imageprep.Config{Width: 224, Height: 224, Scale: 1, Std: [3]float32{1, 1, 1}, ChannelOrder: "BGR", DType: tensor.FP16}
	dst := make([]byte, cfg.ImageBytes())
	return func(b *testing.B, body []byte) {
		if err := cfg.Preprocess(dst, body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResponseCompression: encoding a V2 JSON response (identity),
// then compressing it at Level (gzip, deflate) and, for comparison, at
// gzip's default level: the MLP's [1,16] output, a classifier's [1,1000]
// scores, and a batch of 8 of them.
func BenchmarkResponseCompression(b *testing.B) {
	for _, shape := range [][]int64{{1, 16}, {1, 1000}, {8, 1000}} {
		n := int(shape[0] * shape[1])
		data := make([]byte, 0, 4*n)
		for i := range n {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(math.Sin(float64(i)*0.37))))
		}
		outs := []tensor.Tensor{{Name: "y", DType: tensor.FP32, Shape: shape, Data: data}}
		plain, _ := v2.AppendInferResponse(nil, "m", nil, outs)
		b.Run(tensor.FormatShape(shape), func(b *testing.B) {
			for _, tc := range []struct {
				name     string
				compress func([]byte) []byte
			}{
				{"identity", func(p []byte) []byte { return p }},
				{"gzip", func(p []byte) []byte { return httpcoding.Compress(httpcoding.Gzip, p) }},
				{"deflate", func(p []byte) []byte { return httpcoding.Compress(httpcoding.Deflate, p) }},
				{"gzip-default-level", gzipDefault()},
			} {
				b.Run(tc.name, func(b *testing.B) {
					b.SetBytes(int64(len(plain)))
					var buf []byte
					for b.Loop() {
						buf, _ = v2.AppendInferResponse(buf[:0], "m", nil, outs)
						tc.compress(buf)
					}
					b.ReportMetric(float64(len(tc.compress(plain)))/float64(len(plain)), "wire/plain")
				})
			}
		})
	}
}

// gzipDefault compresses at gzip's default level with one reused writer,
// as Compress reuses its pooled ones.
func gzipDefault() func([]byte) []byte {
	w, _ := gzip.NewWriterLevel(nil, flate.DefaultCompression)
	return func(p []byte) []byte {
		var out bytes.Buffer
		w.Reset(&out)
		_, _ = w.Write(p)
		_ = w.Close()
		return out.Bytes()
	}
}
