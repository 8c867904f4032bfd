package v2

import (
	"encoding/binary"
	"errors"
	"github.com/supervisor-dev/supervisor/internal/jsonnum"
	"math"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// data parses the "data" array at the scanner's offset into in.t.Data,
// writing each value straight into its little-endian slot.
func (d *decoder) data(in *input) error {
	s := &d.s
	// Every value takes at least one byte (a BYTES string two) and all but
	// the last a separator, so what is left of the header bounds the
	// count: checking it before allocating keeps a hostile shape from
	// costing memory.
	per := int64(2)
	if in.t.DType == tensor.Bytes {
		if err := d.countBytes(in); err != nil {
			return err
		}
		per = 3
	}
	if in.n > int64(s.length()-s.i+1)/per {
		return badRequest("%s: shape %s needs %d values but the request is too short to hold them",
			in.label(), tensor.FormatShape(in.t.Shape), in.n)
	}
	// A prefix holds at most one value per two of its bytes: room for
	// those is all a prefix decode allocates, whatever the shape says.
	slots := in.n
	if s.cut() {
		slots = min(slots, int64(len(s.b)-s.i)/2+1)
	}
	p := dataParser{
		s:     s,
		in:    in,
		dtype: in.t.DType,
		size:  in.t.DType.Size(),
		n:     int(in.n),
		out:   make([]byte, int(slots)*in.t.DType.Size()), // BYTES: appended to
	}
	j := s.i + 1
	for j < len(s.b) && isSpace(s.b[j]) {
		j++
	}
	p.nested = j < len(s.b) && s.b[j] == '['
	if p.nested && len(in.t.Shape) < 2 {
		return badRequest("%s: data is nested but shape %s has no inner dimensions; send it flat",
			in.label(), tensor.FormatShape(in.t.Shape))
	}
	var err error
	if p.dtype == tensor.FP32 && !p.nested && j < len(s.b) && s.b[j] != ']' {
		var done bool
		p.k, s.i, done = jsonnum.FlatFloat32s(s.b, s.i+1, p.out)
		if !done {
			err = p.elements(0, p.k)
		}
	} else {
		err = p.array(0)
	}
	if err != nil {
		if in.t.DType == tensor.Bytes && errors.Is(err, ErrTruncated) {
			d.openBytes(in, p.out, p.k, p.tail)
		}
		return err
	}
	if p.k != p.n {
		return badRequest("%s: shape %s needs %d values but data has %d",
			in.label(), tensor.FormatShape(in.t.Shape), p.n, p.k)
	}
	in.t.Data = p.out
	return nil
}

func isSpace(c byte) bool { return jsonnum.IsSpace(c) }

// dataParser fills one tensor's bytes from a flat or nested JSON array.
type dataParser struct {
	s      *scanner
	in     *input
	dtype  tensor.DType
	size   int
	n, k   int // values the shape needs, values written so far
	out    []byte
	nested bool // nested arrays that must follow the shape, level by level
	// tail is the start of a BYTES string the end of a prefix cut (up to
	// its first escape), for the caller to judge as far as it goes.
	tail []byte
}

// array reads the array at the scanner's offset, at nesting level level.
// Flat data holds values at level 0; nested data holds arrays down to the
// last dimension of the shape and values there.
func (p *dataParser) array(level int) error {
	s := p.s
	s.i++ // '['
	s.ws()
	if s.peek() == ']' {
		s.i++
		return p.checkLevel(level, 0)
	}
	return p.elements(level, 0)
}

// elements reads the rest of an array from the start of an element, count
// elements in.
func (p *dataParser) elements(level, count int) error {
	s := p.s
	leaf := !p.nested || level == len(p.in.t.Shape)-1
	for {
		s.ws()
		var err error
		switch {
		case leaf:
			err = p.value()
		case s.peek() == '[':
			err = p.array(level + 1)
		default:
			err = p.nestingErr(level+1, false)
		}
		if err != nil {
			return err
		}
		count++
		s.ws()
		if c := s.peek(); c == ',' {
			s.i++
			continue
		} else if c == ']' {
			s.i++
			return p.checkLevel(level, count)
		}
		return s.syntax("',' or ']'")
	}
}

func (p *dataParser) checkLevel(level, count int) error {
	if p.nested && int64(count) != p.in.t.Shape[level] {
		return badRequest("%s: nested data must follow shape %s, but an array at depth %d has %d elements instead of %d",
			p.in.label(), tensor.FormatShape(p.in.t.Shape), level+1, count, p.in.t.Shape[level])
	}
	return nil
}

// nestingErr reports data that does not nest as the shape does: an array
// at depth (1 for the outermost) holding an array where values belong, or
// the other way round.
func (p *dataParser) nestingErr(depth int, foundArray bool) error {
	if !p.nested {
		return badRequest("%s: data mixes values and arrays; send it flat or nested to follow shape %s",
			p.in.label(), tensor.FormatShape(p.in.t.Shape))
	}
	found, want := "a value", "an array"
	if foundArray {
		found, want = want, found
	}
	return badRequest("%s: nested data must follow shape %s, but an array at depth %d holds %s where %s belongs",
		p.in.label(), tensor.FormatShape(p.in.t.Shape), depth, found, want)
}

// value reads one scalar into the next slot.
func (p *dataParser) value() error {
	s := p.s
	if s.peek() == ']' {
		return s.syntax("a value")
	}
	if p.k == p.n {
		return badRequest("%s: shape %s needs %d values but data has more",
			p.in.label(), tensor.FormatShape(p.in.t.Shape), p.n)
	}
	switch c := s.peek(); {
	case c == '[':
		return p.nestingErr(len(p.in.t.Shape), true)
	case p.dtype == tensor.Bytes:
		return p.bytes()
	case p.dtype == tensor.Bool:
		return p.bool()
	case c == 'n' && isFloat(p.dtype):
		if err := s.literal("null"); err != nil {
			return err
		}
		p.putNaN()
		p.k++
		return nil
	}
	start := s.i
	num, end, ok := jsonnum.Scan(s.b, start)
	if !ok {
		if end == start && s.kind() != "no valid JSON value" {
			return badRequest("%s: data[%d] must be a number, got %s", p.in.label(), p.k, s.kind())
		}
		s.i = end
		return s.syntax("a number")
	}
	s.i = end
	tok := s.b[start:end]
	out := p.out[p.k*p.size:]
	switch p.dtype {
	case tensor.FP32:
		binary.LittleEndian.PutUint32(out, math.Float32bits(num.Float32(tok)))
	case tensor.FP64:
		binary.LittleEndian.PutUint64(out, math.Float64bits(num.Float64(tok)))
	case tensor.FP16:
		binary.LittleEndian.PutUint16(out, num.Half(tok, tensor.FP16From64))
	case tensor.BF16:
		binary.LittleEndian.PutUint16(out, num.Half(tok, tensor.BF16From64))
	case tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64:
		lo, hi := signedRange(p.size)
		v, ok := num.Int(lo, hi)
		if !ok {
			return p.rangeErr(&num, tok, lo, uint64(hi))
		}
		putUint(out, uint64(v), p.size)
	default: // the unsigned types
		hi := uint64(math.MaxUint64) >> (64 - 8*p.size)
		v, ok := num.Uint(tok, hi)
		if !ok {
			return p.rangeErr(&num, tok, 0, hi)
		}
		putUint(out, v, p.size)
	}
	p.k++
	return nil
}

// bytes reads one JSON string as a BYTES element: its unescaped bytes,
// length-prefixed (tensor.AppendBytesElement).
func (p *dataParser) bytes() error {
	s := p.s
	if s.peek() != '"' {
		if s.kind() == "no valid JSON value" {
			return s.syntax("a value")
		}
		return badRequest("%s: data[%d] must be a string, got %s", p.in.label(), p.k, s.kind())
	}
	start := s.i + 1
	v, err := s.str()
	if err != nil {
		if errors.Is(err, ErrTruncated) {
			p.tail = rawString(s.b[start:])
		}
		return err
	}
	p.out = tensor.AppendBytesElement(p.out, v)
	p.k++
	return nil
}

func (p *dataParser) bool() error {
	s := p.s
	if c := s.peek(); c != 't' && c != 'f' {
		if s.kind() == "no valid JSON value" {
			return s.syntax("a value")
		}
		return badRequest("%s: data[%d] must be true or false, got %s", p.in.label(), p.k, s.kind())
	}
	v, err := s.bool()
	if err != nil {
		return err
	}
	if v {
		p.out[p.k] = 1
	}
	p.k++
	return nil
}

func (p *dataParser) rangeErr(num *jsonnum.Number, tok []byte, lo int64, hi uint64) error {
	if !num.IsInt() {
		return badRequest("%s: data[%d] is %s but %s needs integers", p.in.label(), p.k, clip(tok), p.dtype)
	}
	return badRequest("%s: data[%d] is %s, outside the %s range [%d, %d]", p.in.label(), p.k, clip(tok), p.dtype, lo, hi)
}

func (p *dataParser) putNaN() {
	out := p.out[p.k*p.size:]
	switch p.dtype {
	case tensor.FP32:
		binary.LittleEndian.PutUint32(out, 0x7fc00000)
	case tensor.FP64:
		binary.LittleEndian.PutUint64(out, 0x7ff8000000000000)
	case tensor.FP16:
		binary.LittleEndian.PutUint16(out, 0x7e00)
	case tensor.BF16:
		binary.LittleEndian.PutUint16(out, 0x7fc0)
	}
}

func isFloat(dt tensor.DType) bool {
	return dt == tensor.FP32 || dt == tensor.FP64 || dt == tensor.FP16 || dt == tensor.BF16
}

// signedRange is the range of a signed integer of size bytes.
func signedRange(size int) (int64, int64) {
	hi := int64(math.MaxInt64) >> (64 - 8*size)
	return -hi - 1, hi
}

// putUint writes the low size bytes of v, little-endian.
func putUint(b []byte, v uint64, size int) {
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}
