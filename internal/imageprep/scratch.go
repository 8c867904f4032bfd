package imageprep

import "sync"

// scratch holds one Preprocess call's working memory. Pooled, so that a
// prep worker preprocessing image after image reuses the same buffers.
type scratch struct {
	rgb    []byte  // decoded pixels when the decoder writes into our memory
	tmp    []byte  // horizontal pass output: the rows the vertical pass reads
	acc    []int32 // vertical pass accumulators, one output row
	row    []byte  // one finished 8-bit RGB output row
	kx, ky kernel
	idx    []int // nearest: source column per output column
	lut    [3][256]uint32
}

// maxPooledBytes keeps one huge image from pinning its decode buffer in
// the pool: bigger buffers are left to the garbage collector.
const maxPooledBytes = 16 << 20

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	if cap(s.rgb) > maxPooledBytes {
		s.rgb = nil
	}
	if cap(s.tmp) > maxPooledBytes {
		s.tmp = nil
	}
	scratchPool.Put(s)
}

// grow returns b resized to n elements, reallocating only when it is too
// small. The contents are not cleared.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}
