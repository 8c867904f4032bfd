package ort

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	onnxruntime "github.com/yalue/onnxruntime_go"
)

// onnxruntime_go v1.27.0 keeps its C handles in unexported fields, and
// the OrtApi calls this package makes itself (outbind_c.go) need three of
// them: the OrtIoBinding, the OrtSession and the OrtRunOptions. Each is
// read by reflect along a path of field names, checked at every step, so
// a change of layout in another version of onnxruntime_go is an error
// naming the field, not a crash.

// errHandleLayout is wrapped by the error a handle read returns when
// onnxruntime_go's layout is not the one this package was written for.
var errHandleLayout = errors.New("onnxruntime_go's layout changed (this package reads it as v1.27.0's): update internal/ort/handles.go for the version in go.mod")

// cHandle returns the non-nil pointer reached from v (a non-nil pointer
// to a struct) through the fields named by path, pointer by pointer.
func cHandle(v any, path ...string) (unsafe.Pointer, error) {
	f := reflect.ValueOf(v)
	for _, name := range path {
		if f.Kind() != reflect.Pointer || f.IsNil() || f.Elem().Kind() != reflect.Struct {
			f = reflect.Value{}
			break
		}
		f = f.Elem().FieldByName(name)
	}
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() {
		return nil, fmt.Errorf("%w: %T holds no C handle at field %s", errHandleLayout, v, strings.Join(path, "."))
	}
	return f.UnsafePointer(), nil
}

// bindingHandle returns the OrtIoBinding inside b.
func bindingHandle(b *onnxruntime.IoBinding) (unsafe.Pointer, error) {
	return cHandle(b, "o")
}

// sessionHandle returns the OrtSession inside s (a DynamicAdvancedSession
// wraps an AdvancedSession, which holds it).
func sessionHandle(s *onnxruntime.DynamicAdvancedSession) (unsafe.Pointer, error) {
	return cHandle(s, "s", "ortSession")
}

// runOptionsHandle returns the OrtRunOptions inside ro; nil for nil ro,
// which ORT reads as its default options.
func runOptionsHandle(ro *onnxruntime.RunOptions) (unsafe.Pointer, error) {
	if ro == nil {
		return nil, nil
	}
	return cHandle(ro, "o")
}
