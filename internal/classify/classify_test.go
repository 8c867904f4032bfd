package classify

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

func f32(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func elements(t *testing.T, out tensor.Tensor) []string {
	t.Helper()
	if err := out.Check(); err != nil {
		t.Fatal(err)
	}
	n, _ := tensor.NumElements(out.Shape)
	els, err := tensor.BytesElements(out.Data, n)
	if err != nil {
		t.Fatal(err)
	}
	s := make([]string, len(els))
	for i, e := range els {
		s[i] = string(e)
	}
	return s
}

func TestClassifyTritonFormat(t *testing.T) {
	in := tensor.Tensor{Name: "prob", DType: tensor.FP32, Shape: []int64{2, 4, 1, 1},
		Data: f32(0.1, 0.6, 0.2, 0.1, float32(math.NaN()), 3, 3, -1)}
	c := Classifier{Labels: []string{"cat", "dog", "fish"}}
	out, err := c.Classify(&in, 3)
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != "prob" || out.DType != tensor.Bytes || !reflect.DeepEqual(out.Shape, []int64{2, 3}) {
		t.Fatalf("out = %s %s %v", out.Name, out.DType, out.Shape)
	}
	want := []string{
		"0.600000:1:dog", "0.200000:2:fish", "0.100000:0:cat",
		"3.000000:1:dog", "3.000000:2:fish", "-1.000000:3", // ties: lower index first; NaN last, no label for 3
	}
	if got := elements(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestClassifySoftmaxAndClip(t *testing.T) {
	in := tensor.Tensor{Name: "logits", DType: tensor.FP32, Shape: []int64{2}, Data: f32(1000, 1000)}
	c := Classifier{Softmax: true}
	out, err := c.Classify(&in, 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"0.500000:0", "0.500000:1"}; !reflect.DeepEqual(elements(t, out), want) || !reflect.DeepEqual(out.Shape, []int64{2}) {
		t.Errorf("got %q %v, want %q [2]", elements(t, out), out.Shape, want)
	}
	if _, err := c.Classify(&in, 0); err == nil {
		t.Error("k=0: no error")
	}
}

func TestReadLabels(t *testing.T) {
	p := filepath.Join(t.TempDir(), "labels.txt")
	if err := os.WriteFile(p, []byte("n01 tench, Tinca\r\ngoldfish\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLabels(p)
	if want := []string{"n01 tench, Tinca", "goldfish"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ReadLabels = %q, %v, want %q", got, err, want)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLabels(p); err == nil {
		t.Error("empty file: no error")
	}
}
