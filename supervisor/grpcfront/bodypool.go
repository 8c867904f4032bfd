package grpcfront

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// bodyPool holds the buffers ModelInfer encodes its requests' bodies
// into (the JSON header, then a copy of the tensors), each taken back
// once ModelInfer has returned: nothing of the body outlives the
// Handler (the lb sends it, and any retry or poison key reads it, before
// ServeInternal returns). A fresh body per RPC, 600 KB for the default
// model, cost the master its page faults and the GC's clearing (issue 33).
var bodyPool = newDirtyPool(8, 26)

// dirtyPool is a mem.BufferPool of power-of-two tiers, 2^min to 2^max
// bytes, whose buffers are not cleared between uses: a buffer of n bytes
// is handed out as its first n bytes, and its taker writes all of them
// before anything reads them (appendInferRequest appends from empty), so
// no earlier request's bytes can be read. gRPC's default pool clears
// each buffer's whole capacity at every Get, against takers that do not.
// A request over 2^max bytes gets a buffer of its own, not pooled.
type dirtyPool struct {
	min, max int
	tiers    []sync.Pool // tiers[i]: buffers of 2^(min+i) bytes
}

func newDirtyPool(minExp, maxExp int) *dirtyPool {
	return &dirtyPool{min: minExp, max: maxExp, tiers: make([]sync.Pool, maxExp-minExp+1)}
}

// tier is the exponent of the smallest tier holding n bytes.
func (p *dirtyPool) tier(n int) int {
	return max(p.min, bits.Len(uint(max(n, 1)-1)))
}

// Get is a buffer of n bytes, whatever they hold.
func (p *dirtyPool) Get(n int) *[]byte {
	t := p.tier(n)
	if t > p.max {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[t-p.min].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<t)
	return &b
}

// Put takes back a buffer Get gave (any prefix of it); one of another
// capacity is dropped.
func (p *dirtyPool) Put(b *[]byte) {
	c := cap(*b)
	t := p.tier(c)
	if c != 1<<t || t > p.max {
		return
	}
	*b = (*b)[:0]
	p.tiers[t-p.min].Put(b)
}

var _ mem.BufferPool = (*dirtyPool)(nil)
