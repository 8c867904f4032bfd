package v2

import "github.com/supervisor-dev/supervisor/internal/tensor"

// Limits bound what one request can make the decoder allocate beyond its
// own body. Each is a count checked as the request is read, before
// anything it counts is expanded: a JSON body of 22 million empty BYTES
// elements ("" is 3 bytes, an element 28 once split) or of a million
// requested outputs costs a few hundred MB otherwise. The zero value of a
// field means its default.
type Limits struct {
	// MaxBytesElements bounds the BYTES elements of all inputs together,
	// checked against the shapes they declare before any "data" is read
	// (an image model's max_images). 0 means DefaultMaxBytesElements.
	MaxBytesElements int64
	// MaxInputs bounds the entries of "inputs"; a valid request has one
	// per model input. 0 means DefaultMaxInputs.
	MaxInputs int
	// MaxOutputs bounds the entries of "outputs"; a valid request names
	// each model output at most once. 0 means DefaultMaxOutputs.
	MaxOutputs int
}

// Defaults of Limits, for callers that do not know the model.
const (
	DefaultMaxBytesElements = 1 << 16
	DefaultMaxInputs        = 1024
	DefaultMaxOutputs       = 1024
)

func (l Limits) maxBytesElements() int64 {
	if l.MaxBytesElements <= 0 {
		return DefaultMaxBytesElements
	}
	return l.MaxBytesElements
}

func (l Limits) maxInputs() int {
	if l.MaxInputs <= 0 {
		return DefaultMaxInputs
	}
	return l.MaxInputs
}

func (l Limits) maxOutputs() int {
	if l.MaxOutputs <= 0 {
		return DefaultMaxOutputs
	}
	return l.MaxOutputs
}

// countBytes adds in's elements to the request's BYTES count, refusing
// the request once it passes the limit.
func (d *decoder) countBytes(in *input) error {
	d.bytesElems += in.n
	if max := d.lim.maxBytesElements(); d.bytesElems > max {
		return badRequest("%s: BYTES shape %s makes %d elements in the request, more than the %d allowed (an image model's max_images); split the request",
			in.label(), tensor.FormatShape(in.t.Shape), d.bytesElems, max)
	}
	return nil
}
