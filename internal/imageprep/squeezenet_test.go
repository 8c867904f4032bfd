//go:build cgo

// ONNX Runtime needs cgo, so this test does too.

package imageprep

import (
	"bufio"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// TestSqueezeNetTop1 runs the shared SqueezeNet on each shared photo,
// preprocessed as its README says (stretch to 224×224, BGR, 0–255, NCHW,
// FP16), and checks the top-1 class. Wrong channel order, layout or scale
// shows up here as wrong classes.
func TestSqueezeNetTop1(t *testing.T) {
	dir := sharedTestdata(t)
	model, err := os.ReadFile(filepath.Join(dir, "squeezenet", "SqueezeNet_fp16.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	labels := readLabels(t, filepath.Join(dir, "squeezenet", "synset.txt"))
	sess := orttest.Open(t, "squeezenet", model, ort.Options{IntraOpThreads: 1})
	cats := []string{"tabby", "tiger cat", "Egyptian cat"}
	fish := []string{"goldfish", "tench", "shark", "ray", "eel", "gar", "sturgeon", "puffer",
		"lionfish", "rock beauty", "anemone fish", "coho", "barracouta"}
	dogBreeds := func(i int) bool { return i >= 151 && i <= 268 } // ImageNet's dog classes
	for _, tt := range []struct {
		photo string
		want  []string       // label substrings, any of which passes
		ok    func(int) bool // or a class index test
	}{
		{photo: "winml_cat.jpg", want: cats},
		{photo: "winml_kitten_224.png", want: cats},
		{photo: "ortex_goldfish.jpg", want: []string{"goldfish"}},
		{photo: "winml_fish.png", want: fish},
		{photo: "winml_hummingbird.jpg", want: []string{"hummingbird"}},
		{photo: "ortex_wolves.jpg", want: []string{"wolf"}},
		{photo: "winml_dog.jpg", ok: dogBreeds},
		{photo: "ortext_pineapple.png", want: []string{"pineapple"}},
	} {
		t.Run(tt.photo, func(t *testing.T) {
			c := Config{Width: 224, Height: 224, ChannelOrder: BGR, DType: tensor.FP16}
			in := tensor.Tensor{Name: "data_0", DType: tensor.FP16, Shape: c.Shape(1), Data: make([]byte, c.ImageBytes())}
			if err := c.Preprocess(in.Data, readPhoto(t, tt.photo)); err != nil {
				t.Fatal(err)
			}
			out, err := sess.Run([]tensor.Tensor{in}, []string{"softmaxout_1"})
			if err != nil {
				t.Fatal(err)
			}
			best, p := argmaxFP16(out[0].Data)
			label := labels[best]
			t.Logf("top-1 %d %q p=%.3f", best, label, p)
			if tt.ok != nil && tt.ok(best) {
				return
			}
			for _, w := range tt.want {
				if strings.Contains(label, w) {
					return
				}
			}
			t.Errorf("top-1 is %q (p=%.3f), want one of %q (or dog classes 151-268 for the dog)", label, p, tt.want)
		})
	}
}

func argmaxFP16(b []byte) (int, float32) {
	best, bestP := 0, float32(-1)
	for i := 0; i+1 < len(b); i += 2 {
		if p := tensor.FP16To32(binary.LittleEndian.Uint16(b[i:])); p > bestP {
			best, bestP = i/2, p
		}
	}
	return best, bestP
}

// readLabels reads synset.txt: "n01440764 tench, Tinca tinca" per line.
func readLabels(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var labels []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		_, label, _ := strings.Cut(sc.Text(), " ")
		labels = append(labels, label)
	}
	if err := sc.Err(); err != nil || len(labels) != 1000 {
		t.Fatalf("%q: %d labels, want 1000: %v", path, len(labels), err)
	}
	return labels
}
