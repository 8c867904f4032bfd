package ort

import (
	"errors"
	"testing"
)

// A layout other than onnxruntime_go v1.27.0's is an error that names
// the field, never a crash or a wrong pointer.
func TestCHandleLayoutChanged(t *testing.T) {
	x := 1
	type inner struct{ o *int }
	type outer struct {
		s *inner
		n int
	}
	ok := &outer{s: &inner{o: &x}, n: x}
	if p, err := cHandle(ok, "s", "o"); err != nil || p == nil {
		t.Fatalf("cHandle on the expected layout: %v, %v", p, err)
	}
	for _, c := range []struct {
		name string
		v    any
		path []string
	}{
		{"field renamed", ok, []string{"s", "handle"}},
		{"not a pointer", ok, []string{"n"}},
		{"nil on the way", &outer{}, []string{"s", "o"}},
		{"nil handle", &outer{s: &inner{}}, []string{"s", "o"}},
		{"path too deep", ok, []string{"s", "o", "p"}},
	} {
		if _, err := cHandle(c.v, c.path...); !errors.Is(err, errHandleLayout) {
			t.Errorf("%s: err %v, want errHandleLayout", c.name, err)
		}
	}
}
