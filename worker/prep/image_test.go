package prep

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

func imageModel(dtype tensor.DType, shape ...int64) *tensor.Metadata {
	return &tensor.Metadata{Name: "m", Inputs: []tensor.Spec{{Name: "x", DType: dtype, Shape: shape}},
		Outputs: []tensor.Spec{{Name: "y", DType: tensor.FP32, Shape: []int64{-1, 10}}}}
}

func TestConcatBatch(t *testing.T) {
	a := []tensor.Tensor{{Name: "y", DType: tensor.Uint8, Shape: []int64{1, 2}, Data: []byte{1, 2}}}
	b := []tensor.Tensor{{Name: "y", DType: tensor.Uint8, Shape: []int64{1, 2}, Data: []byte{3, 4}}}
	got, err := concatBatch(a, b)
	if err != nil || tensor.FormatShape(got[0].Shape) != "[2,2]" || !bytes.Equal(got[0].Data, []byte{1, 2, 3, 4}) {
		t.Errorf("concatBatch = %+v, %v", got, err)
	}
	if _, err := concatBatch(got, []tensor.Tensor{{Name: "z", DType: tensor.Uint8, Shape: []int64{1, 2}}}); err == nil {
		t.Error("stacked outputs with different names")
	}
}

func encodePNG(tb testing.TB, w, h int) []byte {
	tb.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 37)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}
