package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
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

// writeBinaryRequest writes default.request.bin, the default request in
// Triton's binary tensor extension: a JSON header, then the raw FP32 bytes.
// The header's length, which clients send as Inference-Header-Content-Length,
// goes to default.request.bin.header-length.
func writeBinaryRequest(dir string) error {
	const n = 3 * 224 * 224
	header := fmt.Sprintf(`{"inputs":[{"name":"input","datatype":"FP32","shape":[1,3,224,224],"parameters":{"binary_data_size":%d}}]}`, 4*n)
	b := make([]byte, 0, len(header)+4*n)
	b = append(b, header...)
	for _, v := range sampleValues(n) {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
	}
	if err := os.WriteFile(filepath.Join(dir, "default.request.bin"), b, 0o644); err != nil {
		return fmt.Errorf("could not write sample request: %w", err)
	}
	hl := []byte(strconv.Itoa(len(header)) + "\n")
	if err := os.WriteFile(filepath.Join(dir, "default.request.bin.header-length"), hl, 0o644); err != nil {
		return fmt.Errorf("could not write sample request: %w", err)
	}
	return nil
}

// sampleValues returns n fixed values in [0,1) with three decimals, like a
// normalised image (an LCG: the same values every run).
func sampleValues(n int) []float64 {
	v := make([]float64, n)
	x := uint32(12345)
	for i := range v {
		x = x*1664525 + 1013904223
		v[i] = float64(x>>22) / 1024
	}
	return v
}

// writeRequests writes each sample request as JSON, and the default one in
// the binary extension too.
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
		for i, v := range sampleValues(n) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(v, 'f', 3, 64))
		}
		b.WriteString("]}]}\n")
		if err := os.WriteFile(filepath.Join(dir, r.file), b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("could not write sample request: %w", err)
		}
	}
	return writeBinaryRequest(dir)
}
