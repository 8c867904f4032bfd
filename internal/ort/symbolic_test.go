package ort

import (
	"reflect"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
)

func TestSymbolicDims(t *testing.T) {
	b, err := onnxmodel.Types().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := symbolicDims(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"ids": {"batch", ""}, "mask": {"batch", ""},
		"masked": {"batch", ""}, "inverted": {"batch", ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("symbolicDims = %v, want %v", got, want)
	}
	if _, err := symbolicDims(b[:len(b)-3]); err == nil {
		t.Error("symbolicDims of a truncated model succeeded, want an error")
	}
}
