package prep

import (
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker/prep/answercost"
)

// TestLyingRowsChargeTheWholeLane: the rows of an empty input are the
// client's word ([2^40,0] passes NumElements and a [-1,-1] input's
// declaration, with no data), and the answer they promise must be
// charged in full, not wrap: 2^40 rows of a [-1,2^22] FP32 output wrapped
// to 0 bytes (and a [-1,21,512,512] one counted nothing) before
// answercost.Expected saturated, so such a request reserved no room.
func TestLyingRowsChargeTheWholeLane(t *testing.T) {
	for _, out := range [][]int64{{-1, 1 << 22}, {-1, 21, 512, 512}, {-1}} {
		m := &model{md: tensor.Metadata{Name: "text",
			Inputs:  []tensor.Spec{{Name: "ids", DType: tensor.Int64, Shape: []int64{-1, -1}}},
			Outputs: []tensor.Spec{{Name: "y", DType: tensor.FP32, Shape: out}}}}
		in := tensor.Tensor{Name: "ids", DType: tensor.Int64, Shape: []int64{1 << 40, 0}}
		if _, err := tensor.NumElements(in.Shape); err != nil {
			t.Fatalf("the lying shape %v must pass NumElements for this test to mean anything: %v", in.Shape, err)
		}
		req := &v2.InferRequest{Inputs: []tensor.Tensor{in}}
		got := answercost.Expected(m.md.Outputs, req)
		if min := int64(1 << 40); got < min {
			t.Errorf("output %v: answercost.Expected of %v rows = %d, want at least %d (saturated, not wrapped)", out, in.Shape, got, min)
		}
		sub := &v2.InferRequest{Inputs: []tensor.Tensor{in}}
		if c := answercost.Chunks(m.md.Outputs, sub, 8); c < got {
			t.Errorf("output %v: answercost.Chunks of 8 chunks = %d, below one chunk's %d (wrapped)", out, c, got)
		}
	}
}
