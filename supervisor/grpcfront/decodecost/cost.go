package decodecost

import "google.golang.org/protobuf/encoding/protowire"

// rawInputField is ModelInferRequest's raw_input_contents (as
// grpcfront's rawalias.go, which aliases it).
const rawInputField = 7

// The decoded cost of what Of counts beyond bytes: a struct
// (an input, an output, a parameter with its map entry) and a slice
// header (a []byte of raw_input_contents or bytes_contents).
const (
	structCost = 256
	sliceCost  = 24
)

// elementSize is the decoded size of an element of InferTensorContents
// field i: bool, int (int32), int64, uint (uint32), uint64, fp32, fp64.
var elementSize = [...]int64{1: 1, 2: 4, 3: 8, 4: 4, 5: 8, 6: 4, 7: 8}

// Of weighs what decoding the ModelInferRequest b allocates
// and holds: a raw_input_contents entry is a slice header into b
// (grpcfront's unmarshalInferRequest), and then the whole of b is held.
// Malformed input counts what it has read: proto.Unmarshal refuses it.
func Of(b []byte) (n int64) {
	aliased := false
	walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte) {
		n += int64(len(v))
		switch {
		case num == 5 && typ == protowire.BytesType: // inputs
			n += structCost - int64(len(v)) + inputCost(v)
		case num == rawInputField && typ == protowire.BytesType: // aliases b: counted below
			n += sliceCost - int64(len(v))
			aliased = true
		case num == 4: // parameters
			n += structCost
		case num == 6 && typ == protowire.BytesType: // outputs
			n += structCost + outputCost(v)
		case num == 6:
			n += structCost
		}
	})
	if aliased {
		n += int64(len(b))
	}
	return n
}

// inputCost weighs an InferInputTensor: its shape and contents decoded.
func inputCost(b []byte) (n int64) {
	walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte) {
		switch {
		case num == 3 && typ == protowire.BytesType: // shape, packed: sized at once
			n += 8 * varints(v)
		case num == 3 && typ == protowire.VarintType: // one element of a shape, unpacked
			n += 2 * 8 // appended: the slice grows up to twice what it holds
		case num == 4: // parameters
			n += structCost + int64(len(v))
		case num == 5 && typ == protowire.BytesType: // contents: its struct and elements
			n += structCost + contentsCost(v)
		default:
			n += int64(len(v))
		}
	})
	return n
}

// outputCost weighs an InferRequestedOutputTensor beyond its bytes: a
// struct for each of its parameters (a map entry and its value), as the
// request's and an input's are counted, since a parameter of a few bytes
// decodes to about 100.
func outputCost(b []byte) (n int64) {
	walkFields(b, func(num protowire.Number, _ protowire.Type, _ []byte) {
		if num == 2 { // parameters
			n += structCost
		}
	})
	return n
}

// contentsCost weighs an InferTensorContents: each element decoded, a
// BYTES element its slice header and bytes.
func contentsCost(b []byte) (n int64) {
	walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte) {
		switch {
		case num == 8: // bytes_contents
			n += sliceCost + int64(len(v))
		case num < 1 || int(num) >= len(elementSize):
			n += int64(len(v)) // unknown: kept as is
		case typ != protowire.BytesType: // one element, unpacked: appended, as a shape's
			n += 2 * elementSize[num]
		case num == 6 || num == 7: // fp32, fp64, packed: fixed size
			n += int64(len(v))
		default: // varints, packed
			n += elementSize[num] * varints(v)
		}
	})
	return n
}

// walkFields calls f with each field of the message b: its number, wire
// type and value (the payload of a length-delimited one, else its
// bytes); it stops at the first malformed field.
func walkFields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte)) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return
		}
		v := b[n : n+m]
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(v)
		}
		f(num, typ, v)
		b = b[n+m:]
	}
}

// varints counts the varints packed in b (the bytes that end one).
func varints(b []byte) int64 {
	var n int64
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	return n
}
