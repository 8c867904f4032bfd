package ort

import (
	"bytes"
	"fmt"

	onnxruntime "github.com/yalue/onnxruntime_go"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// ONNX STRING tensors travel as V2 BYTES: tensor.Data holds the elements in
// Triton's length-prefixed serialisation (tensor.AppendBytesElement). ORT
// keeps strings as std::string objects, not a flat buffer, so unlike the
// numeric types they cannot be handed over in place: an input is copied
// into an ORT-owned string tensor (onnxruntime_go's NewStringTensor and
// SetContents: CreateTensorAsOrtValue with ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING,
// then FillStringTensor), and an output ORT allocated is copied out
// (GetStringTensorDataLength, GetStringTensorContent) and serialised again.
//
// FillStringTensor takes NUL-terminated C strings, so an element with a NUL
// byte would be cut short silently; such inputs are refused instead, by
// CheckInput before a batcher queues them and again when they run. Rank-0
// strings are refused when the model is opened, as onnxruntime_go's string
// tensors need a shape of rank 1 or more.

// newStringInput copies a Bytes tensor into an ORT string tensor.
func newStringInput(t *tensor.Tensor) (onnxruntime.Value, error) {
	n, err := tensor.NumElements(t.Shape)
	if err != nil {
		return nil, err
	}
	elems, err := tensor.BytesElements(t.Data, n)
	if err != nil {
		return nil, fmt.Errorf("%w: input %q: %w", ErrBadInput, t.Name, err)
	}
	if err := checkNUL(t.Name, elems); err != nil {
		return nil, err
	}
	strs := make([]string, len(elems))
	for i, e := range elems {
		strs[i] = string(e)
	}
	v, err := onnxruntime.NewStringTensor(onnxruntime.Shape(t.Shape))
	if err != nil {
		return nil, fmt.Errorf("could not create string input %q: %w", t.Name, err)
	}
	if err := v.SetContents(strs); err != nil {
		v.Destroy()
		return nil, fmt.Errorf("could not fill string input %q: %w", t.Name, err)
	}
	return v, nil
}

// CheckInput reports, wrapped in ErrBadInput, an input that Run would
// refuse whatever it is batched with although it matches the model's
// metadata: a BYTES element with a NUL byte. A batcher runs it on each
// request before concatenating (batch.Config.CheckInput), so that such a
// request fails alone rather than failing every request of its batch.
func CheckInput(t *tensor.Tensor) error {
	if t.DType != tensor.Bytes {
		return nil
	}
	n, err := tensor.NumElements(t.Shape)
	if err != nil {
		return fmt.Errorf("%w: input %q: %w", ErrBadInput, t.Name, err)
	}
	elems, err := tensor.BytesElements(t.Data, n)
	if err != nil {
		return fmt.Errorf("%w: input %q: %w", ErrBadInput, t.Name, err)
	}
	return checkNUL(t.Name, elems)
}

// checkNUL refuses elements that FillStringTensor would cut at a NUL byte.
func checkNUL(name string, elems [][]byte) error {
	for i, e := range elems {
		if bytes.IndexByte(e, 0) >= 0 {
			return fmt.Errorf("%w: input %q: element %d holds a NUL byte, which ONNX Runtime's string tensors cannot carry", ErrBadInput, name, i)
		}
	}
	return nil
}

// stringBytes serialises a string output ORT allocated as Bytes data.
func stringBytes(v *onnxruntime.StringTensor) ([]byte, error) {
	strs, err := v.GetContents()
	if err != nil {
		return nil, fmt.Errorf("could not read string output: %w", err)
	}
	size := 0
	for _, s := range strs {
		size += 4 + len(s)
	}
	data := make([]byte, 0, size)
	for _, s := range strs {
		data = tensor.AppendBytesElement(data, []byte(s))
	}
	return data, nil
}
