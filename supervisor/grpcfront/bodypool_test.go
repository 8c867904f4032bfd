package grpcfront

import (
	"testing"

	"google.golang.org/grpc/mem"
)

// TestDirtyPoolReusesUncleared: a buffer put back is handed out again as
// it was left, uncleared (mem.DefaultBufferPool clears it, and fails
// this), and always as exactly the length asked for, in the smallest
// tier that holds it; one of a capacity no tier has is not taken back.
func TestDirtyPoolReusesUncleared(t *testing.T) {
	for name, pool := range map[string]mem.BufferPool{"bodyPool": bodyPool, "dirty": newDirtyPool(8, 26)} {
		t.Run(name, func(t *testing.T) {
			reused := false
			for range 20 { // sync.Pool may drop a Put (a GC, -race): twenty chances
				b := pool.Get(5000)
				if len(*b) != 5000 || cap(*b) != 8192 {
					t.Fatalf("Get(5000) gave len %d cap %d; want 5000 in the 8 KiB tier", len(*b), cap(*b))
				}
				if (*b)[0] == 0xEE && (*b)[4999] == 0xEE {
					reused = true
					break
				}
				for i := range *b {
					(*b)[i] = 0xEE
				}
				*b = (*b)[:10] // a prefix goes back, as gRPC's Put allows
				pool.Put(b)
			}
			if !reused {
				t.Error("no buffer came back uncleared in 20 Get/Put rounds")
			}
			if b := pool.Get(1 << 27); len(*b) != 1<<27 {
				t.Errorf("Get(128 MiB), over the largest tier, gave %d bytes", len(*b))
			}
			odd := make([]byte, 5000)
			pool.Put(&odd) // no tier's capacity: dropped
			if b := pool.Get(4097); cap(*b) != 8192 {
				t.Errorf("Get(4097) after a Put of a 5000-byte buffer gave cap %d; want 8192", cap(*b))
			}
		})
	}
}
