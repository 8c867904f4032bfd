package prep

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
)

// BenchmarkDecodeLanes: a decode entering and leaving the small lane,
// and the large one, uncontended, and every P doing so at once.
func BenchmarkDecodeLanes(b *testing.B) {
	for _, tc := range []struct {
		name string
		cost int64
	}{{"small", 1 << 10}, {"large", 32 << 20}} {
		b.Run(tc.name, func(b *testing.B) {
			g := testGate(64, 1<<20, 64<<20+1<<30)
			for b.Loop() {
				decodeOnce(b, g, tc.cost)
			}
		})
		b.Run(tc.name+"-parallel", func(b *testing.B) {
			g := testGate(64, 1<<20, 64<<20+1<<30)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					decodeOnce(b, g, tc.cost)
				}
			})
		})
	}
}

// BenchmarkAnswerCharge: a large answer reserving its room before its
// infer, growing it to its outputs, and giving it back once written.
func BenchmarkAnswerCharge(b *testing.B) {
	g := testGate(2, 1<<20, 2<<20+1<<30)
	h := &handler{bodies: &bodyDecoder{gate: g}}
	var ctx fasthttp.RequestCtx
	for b.Loop() {
		if !h.reserveAnswer(&ctx, 2<<20) || !h.reserveAnswer(&ctx, 4<<20) {
			b.Fatal("no room for the answer")
		}
		ctx.ResetUserValues()
	}
}

// decodeOnce enters g with a decode of cost and leaves.
func decodeOnce(b *testing.B, g *decodegate.Gate, cost int64) {
	c, err := g.Enter(cost, stopper{}.Check)
	if err != nil {
		b.Fatal(err)
	}
	c.Release()
}
