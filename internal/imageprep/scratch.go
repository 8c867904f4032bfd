package imageprep

import (
	"sync"

	"golang.org/x/sys/unix"
)

// scratch holds one Preprocess call's working memory. Pooled, so that a
// prep worker preprocessing image after image reuses the same buffers.
type scratch struct {
	rgb    buf     // decoded pixels when the decoder writes into our memory
	tmp    buf     // a PNG's IDAT data; then the horizontal pass output: the rows the vertical pass reads
	acc    []int32 // vertical pass accumulators, one output row
	row    []byte  // one finished 8-bit RGB output row
	kx, ky kernel
	idx    []int // nearest: source column per output column
	lut    [3][256]uint32
}

// maxPooledBytes keeps one huge image from pinning its decode buffer in
// the pool: bigger buffers are mappings, unmapped when the call ends.
const maxPooledBytes = 16 << 20

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

// putScratch gives s back to the pool, after unmapping its large
// buffers: memory a burst of huge images took goes back to the system
// when each call ends, not at a GC, and is never parked in the pool.
func putScratch(s *scratch) {
	s.rgb.release()
	s.tmp.release()
	scratchPool.Put(s)
}

// buf is a reusable byte buffer. Up to maxPooledBytes it is a Go slice,
// kept across calls; above, an anonymous private mapping (transparent
// huge pages advised), unmapped by release: the kernel zeroes only the
// pages a decode fills, and a prep worker's RSS falls as each huge decode
// ends instead of holding its garbage until a GC (Go zeroes every make,
// and GOGC lets the heap double before collecting).
//
// Invariant: nothing touches a slice grow returned after the next grow
// or release; for a mapping that would be a SIGSEGV. Every holder is
// inside one Preprocess call, which releases its scratch as it returns.
type buf struct {
	b      []byte
	mapped bool
}

// grow returns the buffer resized to n bytes, reallocating only when it
// is too small (the old buffer is freed). The contents are not cleared.
func (b *buf) grow(n int) []byte {
	if cap(b.b) >= n {
		b.b = b.b[:n]
		return b.b
	}
	b.free()
	if n > maxPooledBytes {
		m, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err == nil {
			// 2 MiB pages: a fault per 4 KiB made filling a large
			// mapping several times slower than a make.
			_ = unix.Madvise(m, unix.MADV_HUGEPAGE)
			b.b, b.mapped = m, true
			return b.b
		}
	}
	b.b = make([]byte, n) // a mapping the kernel refused falls back to the heap
	return b.b
}

// release frees a buffer too large to keep: a mapping is unmapped, a
// large heap slice is left to the GC. Small buffers stay for reuse.
func (b *buf) release() {
	if b.mapped || cap(b.b) > maxPooledBytes {
		b.free()
	}
}

// free drops the buffer, unmapping it if it is a mapping.
func (b *buf) free() {
	if b.mapped {
		// Munmap finds the mapping by its last byte: pass its whole
		// capacity. It fails only for memory it did not map.
		_ = unix.Munmap(b.b[:cap(b.b)])
	}
	*b = buf{}
}

// grow returns b resized to n elements, reallocating only when it is too
// small. The contents are not cleared.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}
