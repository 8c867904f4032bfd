package infer

import (
	"errors"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

func TestCheckDivisors(t *testing.T) {
	md := tensor.Metadata{Name: "m", Inputs: []tensor.Spec{
		{Name: "x", DType: tensor.Int64}, {Name: "d", DType: tensor.Int32}, {Name: "f", DType: tensor.FP32}}}
	m := &model{md: md, divisors: integerDivisors(&md, []string{"d", "f", "nope"})}
	if len(m.divisors) != 1 || m.divisors[0] != "d" {
		t.Fatalf("divisors %v, want only the integer input d", m.divisors)
	}
	ok := []tensor.Tensor{{Name: "x", DType: tensor.Int64, Data: make([]byte, 8)}, {Name: "d", DType: tensor.Int32, Data: []byte{0, 1, 0, 0, 0, 0, 0, 1}}}
	if err := m.checkDivisors(ok); err != nil {
		t.Errorf("non-zero divisors (and a zero dividend) refused: %v", err)
	}
	bad := []tensor.Tensor{{Name: "d", DType: tensor.Int32, Data: []byte{7, 0, 0, 0, 0, 0, 0, 0}}}
	if err := m.checkDivisors(bad); !errors.Is(err, batch.ErrBadRequest) {
		t.Errorf("a zero divisor: %v, want ErrBadRequest", err)
	}
	m.md.Inputs[0].DType = tensor.Int32
	min32 := []byte{0, 0, 0, 0x80}
	minusOne := []byte{0xff, 0xff, 0xff, 0xff}
	overflow := []tensor.Tensor{{Name: "x", DType: tensor.Int32, Data: min32}, {Name: "d", DType: tensor.Int32, Data: minusOne}}
	if err := m.checkDivisors(overflow); !errors.Is(err, batch.ErrBadRequest) {
		t.Errorf("MinInt32 / -1: %v, want ErrBadRequest", err)
	}
	alone := []tensor.Tensor{{Name: "x", DType: tensor.Int32, Data: []byte{5, 0, 0, 0}}, {Name: "d", DType: tensor.Int32, Data: minusOne}}
	if err := m.checkDivisors(alone); err != nil {
		t.Errorf("a -1 divisor without the minimum beside it refused: %v", err)
	}
}
