package httpcoding

import (
	"bytes"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
)

// Level is the compression level of Compress: flate.BestSpeed. Response
// bodies are mostly JSON numbers, for which the fastest level already
// gives most of the size gain, and the CPU is the prep worker's (see
// BenchmarkCompress for the ratio against the default level).
const Level = flate.BestSpeed

// Writers keep about a megabyte of state each: reuse them.
var (
	gzipWriters = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(io.Discard, Level); return w }}
	zlibWriters = sync.Pool{New: func() any { w, _ := zlib.NewWriterLevel(io.Discard, Level); return w }}
)

// resetWriter is what gzip and zlib writers share.
type resetWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// Compress returns src compressed with c (Identity: src itself).
func Compress(c Coding, src []byte) []byte {
	var pool *sync.Pool
	switch c {
	case Gzip:
		pool = &gzipWriters
	case Deflate:
		pool = &zlibWriters
	default:
		return src
	}
	w := pool.Get().(resetWriter)
	defer pool.Put(w)
	var out bytes.Buffer
	out.Grow(len(src)/2 + 64)
	w.Reset(&out)
	// Writes to a bytes.Buffer do not fail.
	_, _ = w.Write(src)
	_ = w.Close()
	return out.Bytes()
}
