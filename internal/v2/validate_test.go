package v2

import (
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

func TestValidate(t *testing.T) {
	md := &tensor.Metadata{
		Name: "m",
		Inputs: []tensor.Spec{
			{Name: "x", DType: tensor.FP32, Shape: []int64{-1, 16}},
			{Name: "mask", DType: tensor.Bool, Shape: []int64{-1}},
		},
		Outputs: []tensor.Spec{{Name: "y", DType: tensor.FP32, Shape: []int64{-1, 2}}},
	}
	x := tensor.Tensor{Name: "x", DType: tensor.FP32, Shape: []int64{3, 16}}
	mask := tensor.Tensor{Name: "mask", DType: tensor.Bool, Shape: []int64{3}}
	cases := []struct {
		name string
		req  InferRequest
		want string // "" for valid
	}{
		{"valid", InferRequest{Inputs: []tensor.Tensor{x, mask}, Outputs: []RequestedOutput{{Name: "y"}}}, ""},
		{"order does not matter", InferRequest{Inputs: []tensor.Tensor{mask, x}}, ""},
		{"shape", InferRequest{Inputs: []tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{2, 3}}, mask}},
			`input "x": shape [2,3] does not match the model's [-1,16]`},
		{"rank", InferRequest{Inputs: []tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{16}}, mask}},
			`input "x": shape [16] does not match the model's [-1,16]`},
		{"dtype", InferRequest{Inputs: []tensor.Tensor{{Name: "x", DType: tensor.Int32, Shape: []int64{1, 16}}, mask}},
			`input "x": datatype INT32 does not match the model's FP32`},
		{"missing", InferRequest{Inputs: []tensor.Tensor{x}}, `missing input "mask"`},
		{"unknown", InferRequest{Inputs: []tensor.Tensor{x, mask, {Name: "foo", DType: tensor.FP32}}},
			`unknown input "foo" (the model's inputs are: x, mask)`},
		{"twice", InferRequest{Inputs: []tensor.Tensor{x, x, mask}}, `input "x" appears more than once`},
		{"unknown output", InferRequest{Inputs: []tensor.Tensor{x, mask}, Outputs: []RequestedOutput{{Name: "z"}}},
			`unknown output "z" (the model's outputs are: y)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.req.Validate(md)
			if c.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			wantError(t, err, c.want)
		})
	}
}
