package prep

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// TestHeldAnswersTakeBytesNotPlaces: unread large answers hold bytes of
// the large lane, not its decode places (the decode threads): with room
// for four answers in a lane of two places, a third answer is served,
// and a large decode still enters beside them.
func TestHeldAnswersTakeBytesNotPlaces(t *testing.T) {
	const rows = 16 << 10 // 0.5 MiB of outputs, 1.3 MiB of JSON an answer
	g := testGate(2, 1<<20, 2<<20+16<<20)
	h, _ := typesHandler(t, g, tensor.Tensor{Name: "y", DType: tensor.Int64, Shape: []int64{rows, 4}, Data: longestInt64s(rows)})
	var held []*fasthttp.RequestCtx
	t.Cleanup(func() {
		for _, ctx := range held {
			ctx.ResetUserValues()
		}
	})
	for i := range 3 {
		ctx := postTypes(h, rows)
		held = append(held, ctx) // unread: its user values stay open
		if s := ctx.Response.StatusCode(); s != fasthttp.StatusOK {
			t.Fatalf("answer %d with %d held (%+v, lane %d bytes): %d %.200q, want 200", i+1, i, g.State(), g.Largest(), s, ctx.Response.Body())
		}
	}
	entered(t, enterAsync(g, 2<<20, stopper{}), "a 2 MiB decode beside 3 held answers").Release()
}
