package tensor

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Request is what a prep worker sends an infer worker: the model, the
// outputs the client asked for (empty = all) and the input tensors.
type Request struct {
	Model   string
	Outputs []string
	Inputs  []Tensor
}

// The wire format is a sequence of uvarint-prefixed fields:
//
//	request  = magic model nOutputs {name} tensors
//	tensors  = nTensors {name dtype(1 byte) rank {varint dim} nBytes bytes}
//
// Parsed tensors alias the input buffer: no copy of the payload is made.
const wireMagic = 0x53565431 // "SVT1"

// ErrWire is returned (wrapped) for any malformed frame.
var ErrWire = errors.New("malformed tensor frame")

// maxWireCount bounds counts read from the wire before anything is allocated.
const maxWireCount = 1 << 16

// AppendRequest appends the encoding of r to dst.
func AppendRequest(dst []byte, r *Request) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, wireMagic)
	dst = appendString(dst, r.Model)
	dst = binary.AppendUvarint(dst, uint64(len(r.Outputs)))
	for _, o := range r.Outputs {
		dst = appendString(dst, o)
	}
	return AppendTensors(dst, r.Inputs)
}

// ParseRequest decodes a frame written by AppendRequest.
func ParseRequest(b []byte) (Request, error) {
	var r Request
	if len(b) < 4 || binary.LittleEndian.Uint32(b) != wireMagic {
		return r, fmt.Errorf("%w: bad magic", ErrWire)
	}
	d := decoder{b: b[4:]}
	r.Model = d.string()
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		r.Outputs = append(r.Outputs, d.string())
	}
	if d.err != nil {
		return r, d.err
	}
	ts, err := ParseTensors(d.b)
	r.Inputs = ts
	return r, err
}

// AppendTensors appends the encoding of ts to dst.
func AppendTensors(dst []byte, ts []Tensor) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ts)))
	for i := range ts {
		t := &ts[i]
		dst = appendString(dst, t.Name)
		dst = append(dst, byte(t.DType))
		dst = binary.AppendUvarint(dst, uint64(len(t.Shape)))
		for _, dim := range t.Shape {
			dst = binary.AppendVarint(dst, dim)
		}
		dst = binary.AppendUvarint(dst, uint64(len(t.Data)))
		dst = append(dst, t.Data...)
	}
	return dst
}

// ParseTensors decodes tensors written by AppendTensors and checks each
// one's data length against its shape and dtype.
func ParseTensors(b []byte) ([]Tensor, error) {
	d := decoder{b: b}
	n := d.count()
	ts := make([]Tensor, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		t := Tensor{Name: d.string(), DType: DType(d.byte())}
		rank := d.count()
		t.Shape = make([]int64, 0, rank)
		for j := 0; j < rank && d.err == nil; j++ {
			t.Shape = append(t.Shape, d.varint())
		}
		t.Data = d.bytes()
		if d.err == nil {
			if err := t.Check(); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrWire, err)
			}
		}
		ts = append(ts, t)
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrWire, len(d.b))
	}
	return ts, d.err
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decoder reads fields until the first error, which sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated %s", ErrWire, what)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("length")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("dimension")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) count() int {
	v := d.uvarint()
	if v > maxWireCount {
		d.fail("count")
		return 0
	}
	return int(v)
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("dtype")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("data")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }
