package ort

import (
	"errors"
	"strings"
	"testing"

	onnxruntime "github.com/yalue/onnxruntime_go"
)

// _Ctype_struct_Thing is named as cgo names C's struct Thing, so that the
// layout checks take a pointer to it for a C handle.
type _Ctype_struct_Thing struct{ n int }

// A layout other than onnxruntime_go v1.27.0's is an error that names
// the field, never a crash or a wrong pointer.
func TestCHandleLayoutChanged(t *testing.T) {
	x := &_Ctype_struct_Thing{n: 1}
	type inner struct {
		o *_Ctype_struct_Thing
		g *int
	}
	type outer struct {
		s *inner
		n int
	}
	ok := &outer{s: &inner{o: x, g: &x.n}, n: x.n}
	if p, err := cHandle(ok, "Thing", "s", "o"); err != nil || p == nil {
		t.Fatalf("cHandle on the expected layout: %v, %v", p, err)
	}
	for _, c := range []struct {
		name  string
		v     any
		cType string
		path  []string
	}{
		{"field renamed", ok, "Thing", []string{"s", "handle"}},
		{"not a pointer", ok, "Thing", []string{"n"}},
		{"points to a Go value", ok, "Thing", []string{"s", "g"}},
		{"points to another C struct", ok, "OrtIoBinding", []string{"s", "o"}},
		{"nil on the way", &outer{}, "Thing", []string{"s", "o"}},
		{"nil handle", &outer{s: &inner{}}, "Thing", []string{"s", "o"}},
		{"nil value", (*outer)(nil), "Thing", []string{"s", "o"}},
		{"path too deep", ok, "Thing", []string{"s", "o", "p"}},
		{"not a pointer to a struct", x.n, "Thing", []string{"n"}},
	} {
		if _, err := cHandle(c.v, c.cType, c.path...); !errors.Is(err, errHandleLayout) {
			t.Errorf("%s: err %v, want errHandleLayout", c.name, err)
		}
	}
}

// The onnxruntime_go in go.mod has the layout this package reads: each
// handle's read gets past the checks on the types (down to the C struct
// its field points to) and only then refuses the unset handle of a zero
// value, as it would a destroyed one. So a go.mod bump that moves a handle
// fails here, without ONNX Runtime, and not at a run.
func TestOnnxruntimeGoLayout(t *testing.T) {
	for name, read := range map[string]func() error{
		"IoBinding":              func() error { _, err := bindingHandle(&onnxruntime.IoBinding{}); return err },
		"DynamicAdvancedSession": func() error { _, err := sessionHandle(&onnxruntime.DynamicAdvancedSession{}); return err },
		"RunOptions":             func() error { _, err := runOptionsHandle(&onnxruntime.RunOptions{}); return err },
	} {
		if err := read(); !errors.Is(err, errHandleLayout) || !strings.Contains(err.Error(), "holds no C handle") {
			t.Errorf("%s with no handle: err %v, want one saying it holds no C handle (any other: the layout changed)", name, err)
		}
	}
	if p, err := runOptionsHandle(nil); p != nil || err != nil {
		t.Errorf("runOptionsHandle(nil) = %v, %v; want nil, nil (ORT's default options)", p, err)
	}
}
