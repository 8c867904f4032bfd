package front

import "golang.org/x/sys/unix"

// mappedBodyMin is the size from which a body buffer is an anonymous
// private mapping rather than a Go slice. A var so tests can map every
// body (TestMain), exercising the unmap paths on every test request.
var mappedBodyMin = 1 << 20

// bodyBuf is one request body's buffer. Above mappedBodyMin it is an
// anonymous private mmap, not Go heap: the kernel zeroes only the pages
// the body actually fills (a client declaring 64 MiB and sending 2 MiB
// costs 2 to 4 MiB: pages are huge where the kernel can), and free gives the memory back to the system at once, so
// the master's RSS follows the body bytes live (the body budget), not the
// GC's schedule. Smaller buffers are Go slices, freed by the GC.
//
// Invariant: after free (or grow, for the old buffer) nothing may touch
// the bytes of a mapped buffer; an access is a SIGSEGV that kills the
// master, no recover. The only holders of b.b are the bodyReader while it
// reads, and, once the body is complete, the request it is set on
// (Request.SetBodyRaw keeps the slice header, never a copy). That request
// is read by the lb synchronously on the handler's goroutine (fasthttp
// v1.74.0 HostClient.DoDeadline does the exchange, and every retry
// resends the same body, before it returns; no goroutine outlives it).
// So a body is freed in exactly one place: finish, called when serveFront
// returns (deferred), after the body is detached from the request
// (verdict.detachBody), so that neither fasthttp's reset of the request
// nor anything else can reach it.
type bodyBuf struct {
	b      []byte // len: bytes received; cap: the buffer's size
	mapped bool
}

// alloc makes an empty buffer of capacity n, replacing nothing: call it
// on a zero bodyBuf. A mapping the kernel refuses falls back to the Go
// heap (the body budget still bounds it).
func (bb *bodyBuf) alloc(n int) {
	if n >= mappedBodyMin && n > 0 {
		m, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err == nil {
			// Transparent huge pages: a 4 KiB page fault per 4 KiB
			// written made filling 64 MiB 4x slower than a Go make
			// (400 vs 110 ms on the dev VM); 2 MiB pages make it 7 ms.
			// Advice only: without THP it is 4 KiB pages.
			_ = unix.Madvise(m, unix.MADV_HUGEPAGE)
			bb.b, bb.mapped = m[:0], true
			return
		}
	}
	bb.b, bb.mapped = make([]byte, 0, n), false
}

// grow replaces the buffer with one of capacity n holding the same bytes,
// and frees the old one.
func (bb *bodyBuf) grow(n int) {
	var nb bodyBuf
	nb.alloc(n)
	nb.b = append(nb.b, bb.b...)
	bb.free()
	*bb = nb
}

// free gives the buffer back (unmaps a mapped one) and leaves bb empty;
// freeing an empty bodyBuf does nothing. See the invariant above.
func (bb *bodyBuf) free() {
	if bb.mapped {
		// Munmap finds the mapping by its last byte, so the full
		// capacity is passed. It fails only for a slice it did not
		// map, which bb never holds.
		_ = unix.Munmap(bb.b[:cap(bb.b)])
	}
	*bb = bodyBuf{}
}
