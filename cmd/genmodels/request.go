package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// sampleRequests are the V2 requests written next to the models, for curl,
// hey and wrk: file name -> input name, shape.
var sampleRequests = []struct {
	file, input string
	shape       []int
}{
	{"default.request.json", "input", []int{1, 3, 224, 224}},
	{"mlp.request.json", "x", []int{1, 16}},
}

// writeRequests writes each sample request with deterministic values in
// [0,1) printed with three decimals, like a normalised image.
func writeRequests(dir string) error {
	for _, r := range sampleRequests {
		n := 1
		for _, d := range r.shape {
			n *= d
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"inputs":[{"name":%q,"datatype":"FP32","shape":[`, r.input)
		for i, d := range r.shape {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		b.WriteString(`],"data":[`)
		x := uint32(12345)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			x = x*1664525 + 1013904223 // LCG: fixed values, no seed state
			b.WriteString(strconv.FormatFloat(float64(x>>22)/1024, 'f', 3, 64))
		}
		b.WriteString("]}]}\n")
		if err := os.WriteFile(filepath.Join(dir, r.file), b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("could not write sample request: %w", err)
		}
	}
	return nil
}
