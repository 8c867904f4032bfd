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
//	tensors  = nTensors {name dtype(1 byte) rank {varint dim} nBytes pad bytes}
//
// pad is 0-7 zero bytes that put each tensor's data at a multiple of 8 from
// the start of the frame, so that data parsed in place from an 8-aligned
// buffer (Go heap allocations are) is naturally aligned for every element
// type and ONNX Runtime can use it without a copy. Parsed tensors alias the
// input buffer: no copy of the payload is made.
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
	d := decoder{b: b[4:], off: 4}
	r.Model = d.string()
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		r.Outputs = append(r.Outputs, d.string())
	}
	if d.err != nil {
		return r, d.err
	}
	ts, err := parseTensors(d)
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
		dst = append(dst, make([]byte, padding(len(dst)))...)
		dst = append(dst, t.Data...)
	}
	return dst
}

// ParseTensors decodes tensors written by AppendTensors and checks each
// one's data length against its shape and dtype.
func ParseTensors(b []byte) ([]Tensor, error) {
	return parseTensors(decoder{b: b})
}

func parseTensors(d decoder) ([]Tensor, error) {
	n := d.count()
	ts := make([]Tensor, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		t := Tensor{Name: d.string(), DType: DType(d.byte())}
		rank := d.count()
		t.Shape = make([]int64, 0, rank)
		for j := 0; j < rank && d.err == nil; j++ {
			t.Shape = append(t.Shape, d.varint())
		}
		t.Data = d.paddedBytes()
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

// padding is the number of bytes that bring offset to a multiple of 8.
func padding(offset int) int { return (8 - offset%8) % 8 }

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decoder reads fields until the first error, which sticks. off is the
// offset of b within the frame, for alignment padding.
type decoder struct {
	b   []byte
	off int
	err error
}

// advance consumes n bytes.
func (d *decoder) advance(n int) {
	d.b = d.b[n:]
	d.off += n
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
	d.advance(n)
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("dimension")
		return 0
	}
	d.advance(n)
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
	d.advance(1)
	return c
}

func (d *decoder) bytes() []byte { return d.take(d.uvarint()) }

// paddedBytes reads a length, skips the alignment padding, then the bytes.
func (d *decoder) paddedBytes() []byte {
	n := d.uvarint()
	if p := padding(d.off); d.err == nil && p > 0 {
		d.take(uint64(p))
	}
	return d.take(n)
}

// take consumes n bytes and returns them, capacity-limited so appends to
// them cannot overwrite what follows.
func (d *decoder) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("data")
		return nil
	}
	v := d.b[:n:n]
	d.advance(int(n))
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }
