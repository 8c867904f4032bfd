package v2

import (
	"fmt"
	"math"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// maxRank bounds the number of dimensions of an input's shape.
const maxRank = 32

// input is one entry of "inputs" while it is being read. Its fields may come
// in any order, so "data" is parsed on the spot only when the name,
// datatype and shape are already known; otherwise its offset is kept and it
// is parsed once the object has been read.
type input struct {
	t        tensor.Tensor
	index    int
	hasName  bool
	hasDType bool
	dtype    string // as sent
	hasShape bool
	n        int64 // number of elements, once the shape is known and valid
	shapeErr error
	hasData  bool
	dataAt   int   // offset of a "data" array still to parse, or -1
	binSize  int64 // parameters.binary_data_size, or -1
}

// label names the input in messages: by name once known.
func (in *input) label() string {
	if in.hasName {
		return fmt.Sprintf("input %q", in.t.Name)
	}
	return fmt.Sprintf("inputs[%d]", in.index)
}

// ready reports whether "data" can be parsed now.
func (in *input) ready() bool {
	return in.hasName && in.t.DType.Valid() && in.hasShape && in.shapeErr == nil
}

// inputList reads "inputs": an array of input objects.
func (d *decoder) inputList() error {
	s := &d.s
	if s.peek() != '[' {
		return badRequest(`"inputs" must be an array, got %s`, s.kind())
	}
	names := map[string]bool{}
	return s.array(func(i int) error {
		if i == d.lim.maxInputs() {
			return badRequest(`"inputs" has more than %d entries, the model's inputs; send each input once`, i)
		}
		if s.peek() != '{' {
			return badRequest("inputs[%d] must be an object, got %s", i, s.kind())
		}
		d.inputs = append(d.inputs, input{index: i, dataAt: -1, binSize: -1})
		in := &d.inputs[len(d.inputs)-1]
		if err := s.object(func(key []byte) error { return d.inputField(in, key) }); err != nil {
			return err
		}
		if err := d.finishInput(in); err != nil {
			return err
		}
		if names[in.t.Name] {
			return badRequest("input %q appears more than once", in.t.Name)
		}
		names[in.t.Name] = true
		d.done++
		return nil
	})
}

func (d *decoder) inputField(in *input, key []byte) error {
	s := &d.s
	switch string(key) {
	case "name":
		if s.peek() != '"' {
			return badRequest(`%s: "name" must be a string, got %s`, in.label(), s.kind())
		}
		v, err := s.str()
		in.t.Name, in.hasName = string(v), true
		return err
	case "datatype":
		if s.peek() != '"' {
			return badRequest(`%s: "datatype" must be a string, got %s`, in.label(), s.kind())
		}
		v, err := s.str()
		in.dtype, in.hasDType = string(v), true
		in.t.DType, _ = tensor.ParseDType(in.dtype)
		return err
	case "shape":
		return d.shape(in)
	case "parameters":
		return d.inputParameters(in)
	case "data":
		if s.peek() != '[' {
			return badRequest(`%s: "data" must be an array, got %s`, in.label(), s.kind())
		}
		in.hasData = true
		if in.ready() {
			return d.data(in)
		}
		in.dataAt = s.i
		return s.skip(1)
	}
	return s.skip(3)
}

// shape reads "shape": an array of non-negative integers.
func (d *decoder) shape(in *input) error {
	s := &d.s
	if s.peek() != '[' {
		return badRequest(`%s: "shape" must be an array of non-negative integers, got %s`, in.label(), s.kind())
	}
	in.t.Shape = make([]int64, 0, 4)
	err := s.array(func(i int) error {
		v, err := s.intIn(fmt.Sprintf("%s: shape[%d]", in.label(), i), math.MaxInt64)
		if err != nil {
			return err
		}
		if i == maxRank {
			return badRequest("%s: shape has more than %d dimensions", in.label(), maxRank)
		}
		in.t.Shape = append(in.t.Shape, v)
		return nil
	})
	in.hasShape = true
	in.n, in.shapeErr = tensor.NumElements(in.t.Shape)
	return err
}

func (d *decoder) inputParameters(in *input) error {
	s := &d.s
	if s.peek() != '{' {
		return badRequest(`%s: "parameters" must be an object, got %s`, in.label(), s.kind())
	}
	return s.object(func(key []byte) error {
		if string(key) == "shared_memory_region" {
			return badRequest("%s: %s", in.label(), RegionNotRead)
		}
		if string(key) != "binary_data_size" {
			return s.skip(4)
		}
		var err error
		in.binSize, err = s.intIn(in.label()+": parameters.binary_data_size", math.MaxInt64)
		return err
	})
}

// finishInput checks an input object once all its fields are read and
// parses a "data" array that came before the fields it depends on.
func (d *decoder) finishInput(in *input) error {
	switch {
	case !in.hasName:
		return badRequest(`inputs[%d] has no "name"`, in.index)
	case !in.hasDType:
		return badRequest(`%s has no "datatype"`, in.label())
	case !in.t.DType.Valid():
		return badRequest("%s: unknown datatype %q; use one of BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, FP32, FP64, BF16, BYTES", in.label(), in.dtype)
	case !in.hasShape:
		return badRequest(`%s has no "shape"`, in.label())
	case in.shapeErr != nil:
		return badRequest("%s: %v", in.label(), in.shapeErr)
	case in.hasData && in.binSize >= 0:
		return badRequest(`%s has both "data" and parameters.binary_data_size; send one of them`, in.label())
	case in.binSize >= 0 && in.t.DType == tensor.Bytes:
		return d.countBytes(in) // elements vary in length: binary checks them
	case in.binSize >= 0:
		if want := in.n * int64(in.t.DType.Size()); in.binSize != want {
			return badRequest("%s: binary_data_size is %d but shape %s of %s needs %d bytes", in.label(), in.binSize, tensor.FormatShape(in.t.Shape), in.t.DType, want)
		}
		return nil
	case !in.hasData:
		return badRequest(`%s has no "data" and no parameters.binary_data_size`, in.label())
	case in.dataAt < 0:
		return nil // parsed as it came
	}
	s := &d.s
	save := s.i
	s.i = in.dataAt
	err := d.data(in)
	s.i = save
	return err
}
