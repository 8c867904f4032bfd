package v2

import (
	"fmt"
	"net/http"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Limits bound what one request can make the decoder allocate beyond its
// own body. Each is a count checked as the request is read, before
// anything it counts is expanded: a JSON body of 22 million empty BYTES
// elements ("" is 3 bytes, an element 28 once split) or of a million
// requested outputs costs a few hundred MB otherwise. The zero value of a
// field means its default.
type Limits struct {
	// MaxBytesElements bounds the BYTES elements of all inputs together,
	// checked against the shapes they declare before any "data" is read
	// (an image model's max_images). 0 means MaxBodyBytes /
	// BytesElementCost, or DefaultMaxBytesElements without MaxBodyBytes.
	MaxBytesElements int64
	// MaxBodyBytes is the largest request body (max_body_bytes): the
	// request's budget, from which the BYTES element bound is derived
	// when MaxBytesElements is 0, so that splitting a request's elements
	// costs at most this much again, whatever their lengths. 0: unknown.
	MaxBodyBytes int64
	// MaxInputs bounds the entries of "inputs"; a valid request has one
	// per model input. 0 means DefaultMaxInputs.
	MaxInputs int
	// MaxOutputs bounds the entries of "outputs"; a valid request names
	// each model output at most once. 0 means DefaultMaxOutputs.
	MaxOutputs int
}

// BytesElementCost is what one BYTES element costs beyond its own bytes
// once a request is split and run, whatever its length: its slice header
// when split (24 bytes), its Go string header (16) and ONNX Runtime's
// std::string (32) in the infer worker's string tensor. An empty element
// takes 3 bytes of a JSON body ("",) and 4 of a binary one, so without a
// bound a body of max_body_bytes would cost about 24 times as much.
const BytesElementCost = 72

// Defaults of Limits, for callers that do not know the model.
const (
	// DefaultMaxBytesElements is the BYTES element bound when neither
	// MaxBytesElements nor MaxBodyBytes is known.
	DefaultMaxBytesElements = 1 << 16
	DefaultMaxInputs        = 1024
	DefaultMaxOutputs       = 1024
)

func (l Limits) maxBytesElements() int64 {
	switch {
	case l.MaxBytesElements > 0:
		return l.MaxBytesElements
	case l.MaxBodyBytes > 0:
		return max(l.MaxBodyBytes/BytesElementCost, 1)
	}
	return DefaultMaxBytesElements
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
// the request once it passes the limit: 413 past the count the body
// budget (MaxBodyBytes) pays for, 400 past a given count (an image
// model's max_images).
func (d *decoder) countBytes(in *input) error {
	d.bytesElems += in.n
	limit := d.lim.maxBytesElements()
	switch {
	case d.bytesElems <= limit:
		return nil
	case d.lim.MaxBytesElements <= 0 && d.lim.MaxBodyBytes > 0:
		return &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf(
			"%s: BYTES shape %s makes %d elements in the request, more than the %d that max_body_bytes allows (%d bytes, at %d bytes per element once split); split the request",
			in.label(), tensor.FormatShape(in.t.Shape), d.bytesElems, limit, d.lim.MaxBodyBytes, BytesElementCost)}
	}
	return badRequest("%s: BYTES shape %s makes %d elements in the request, more than the %d allowed (an image model's max_images); split the request",
		in.label(), tensor.FormatShape(in.t.Shape), d.bytesElems, limit)
}
