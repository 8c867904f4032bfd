package grpcfront

import (
	"encoding/binary"
	"fmt"
	"math"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// pack lays typed contents out as the binary tensor data of datatype:
// little-endian, row-major; BYTES as a 4-byte length then the bytes. A
// value that does not fit datatype (an INT8 of 300) is refused, not
// truncated. FP16 and BF16 have no typed field: they come raw.
func pack(datatype string, c *pb.InferTensorContents) ([]byte, error) {
	switch datatype {
	case "BOOL":
		b := make([]byte, len(c.GetBoolContents()))
		for i, v := range c.GetBoolContents() {
			if v {
				b[i] = 1
			}
		}
		return b, nil
	case "INT8", "INT16", "INT32":
		return packInts(datatype, c.GetIntContents())
	case "INT64":
		return packWords(c.GetInt64Contents(), 8, func(v int64) uint64 { return uint64(v) }), nil
	case "UINT8", "UINT16", "UINT32":
		return packUints(datatype, c.GetUintContents())
	case "UINT64":
		return packWords(c.GetUint64Contents(), 8, func(v uint64) uint64 { return v }), nil
	case "FP32":
		return packWords(c.GetFp32Contents(), 4, func(v float32) uint64 { return uint64(math.Float32bits(v)) }), nil
	case "FP64":
		return packWords(c.GetFp64Contents(), 8, math.Float64bits), nil
	case "BYTES":
		return packBytes(c.GetBytesContents()), nil
	}
	return nil, fmt.Errorf("datatype %q has no typed contents field; send its data in raw_input_contents", datatype)
}

// packWords writes each value's low size bytes, little-endian.
func packWords[T any](vs []T, size int, bits func(T) uint64) []byte {
	b := make([]byte, len(vs)*size)
	for i, v := range vs {
		u := bits(v)
		for k := range size {
			b[i*size+k] = byte(u >> (8 * k))
		}
	}
	return b
}

var intRange = map[string]struct {
	size   int
	lo, hi int64
}{"INT8": {1, math.MinInt8, math.MaxInt8}, "INT16": {2, math.MinInt16, math.MaxInt16}, "INT32": {4, math.MinInt32, math.MaxInt32}}

func packInts(datatype string, vs []int32) ([]byte, error) {
	r := intRange[datatype]
	for i, v := range vs {
		if int64(v) < r.lo || int64(v) > r.hi {
			return nil, fmt.Errorf("int_contents[%d] = %d does not fit %s", i, v, datatype)
		}
	}
	return packWords(vs, r.size, func(v int32) uint64 { return uint64(v) }), nil
}

var uintSize = map[string]struct {
	size int
	hi   uint32
}{"UINT8": {1, math.MaxUint8}, "UINT16": {2, math.MaxUint16}, "UINT32": {4, math.MaxUint32}}

func packUints(datatype string, vs []uint32) ([]byte, error) {
	r := uintSize[datatype]
	for i, v := range vs {
		if v > r.hi {
			return nil, fmt.Errorf("uint_contents[%d] = %d does not fit %s", i, v, datatype)
		}
	}
	return packWords(vs, r.size, func(v uint32) uint64 { return uint64(v) }), nil
}

func packBytes(vs [][]byte) []byte {
	n := 0
	for _, v := range vs {
		n += 4 + len(v)
	}
	b := make([]byte, 0, n)
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b
}
