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
// read by reflect along a path of field names, checked at every step on
// the types, down to the C struct the last field must point to (cgo names
// it _Ctype_struct_X), so a change of layout in another version of
// onnxruntime_go is an error naming the field, not a crash, and never a Go
// pointer handed to C as a handle.
//
// What is read is the handle's value, C memory the Go GC neither moves nor
// frees (onnxruntime_go sets no finalizers): it stays valid until the Go
// value holding it is destroyed, which its callers order after the C call
// (a deferred Destroy, a release, Session.mu held shared).

// errHandleLayout is wrapped by the error a handle read returns when
// onnxruntime_go's layout is not the one this package was written for.
var errHandleLayout = errors.New("onnxruntime_go's layout changed (this package reads it as v1.27.0's): update internal/ort/handles.go for the version in go.mod")

// cHandle returns the non-nil pointer to C's struct cType reached from v
// (a non-nil pointer to a struct) through the fields named by path,
// pointer by pointer.
func cHandle(v any, cType string, path ...string) (unsafe.Pointer, error) {
	index, err := handleIndex(reflect.TypeOf(v), cType, path)
	if err != nil {
		return nil, fmt.Errorf("%w: %T: %w", errHandleLayout, v, err)
	}
	f := reflect.ValueOf(v)
	for _, i := range index {
		if f.IsNil() {
			break
		}
		f = f.Elem().Field(i)
	}
	if f.IsNil() {
		return nil, fmt.Errorf("%w: %T holds no C handle at field %s", errHandleLayout, v, strings.Join(path, "."))
	}
	return f.UnsafePointer(), nil
}

// handleIndex checks on types alone that t, a pointer to a struct, leads
// through the fields named by path, each a pointer to a struct but the
// last, which points to C's struct cType, and returns the fields' indices.
func handleIndex(t reflect.Type, cType string, path []string) ([]int, error) {
	index := make([]int, 0, len(path))
	for _, name := range path {
		if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("%v is not a pointer to a struct with field %s", t, name)
		}
		f, ok := t.Elem().FieldByName(name)
		if !ok || len(f.Index) != 1 {
			return nil, fmt.Errorf("%v has no field %s", t.Elem(), name)
		}
		index, t = append(index, f.Index[0]), f.Type
	}
	if want := "_Ctype_struct_" + cType; t == nil || t.Kind() != reflect.Pointer || t.Elem().Name() != want {
		return nil, fmt.Errorf("field %s is %v, not a pointer to C's %s", strings.Join(path, "."), t, cType)
	}
	return index, nil
}

// bindingHandle returns the OrtIoBinding inside b.
func bindingHandle(b *onnxruntime.IoBinding) (unsafe.Pointer, error) {
	return cHandle(b, "OrtIoBinding", "o")
}

// sessionHandle returns the OrtSession inside s (a DynamicAdvancedSession
// wraps an AdvancedSession, which holds it).
func sessionHandle(s *onnxruntime.DynamicAdvancedSession) (unsafe.Pointer, error) {
	return cHandle(s, "OrtSession", "s", "ortSession")
}

// runOptionsHandle returns the OrtRunOptions inside ro; nil for nil ro,
// which ORT reads as its default options.
func runOptionsHandle(ro *onnxruntime.RunOptions) (unsafe.Pointer, error) {
	if ro == nil {
		return nil, nil
	}
	return cHandle(ro, "OrtRunOptions", "o")
}
