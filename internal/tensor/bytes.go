package tensor

import (
	"encoding/binary"
	"fmt"
)

// AppendBytesElement appends one element of a Bytes tensor to dst in
// Triton's serialisation, which the binary tensor extension also uses on
// the wire: a 4-byte little-endian length, then the bytes. A Bytes tensor's
// Data is its elements so serialised, back to back, in row-major order.
func AppendBytesElement(dst, elem []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(elem)))
	return append(dst, elem...)
}

// BytesElements splits the serialised Data of a Bytes tensor of n elements
// into its elements, which alias data. It fails unless data holds exactly n
// elements (CheckBytesElements, which runs first), so a hostile length
// prefix or count costs nothing.
func BytesElements(data []byte, n int64) ([][]byte, error) {
	if err := CheckBytesElements(data, n); err != nil {
		return nil, err
	}
	elems := make([][]byte, 0, n)
	for i := range n {
		if len(data) < 4 {
			return nil, fmt.Errorf("element %d: %d bytes left, too few for its 4-byte length", i, len(data))
		}
		size := binary.LittleEndian.Uint32(data)
		data = data[4:]
		if uint64(size) > uint64(len(data)) {
			return nil, fmt.Errorf("element %d: length %d but only %d bytes left", i, size, len(data))
		}
		elems = append(elems, data[:size:size])
		data = data[size:]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%d bytes after the last of %d elements", len(data), n)
	}
	return elems, nil
}

// CheckBytesElements reports whether data holds exactly n length-prefixed
// elements, without allocating: a check that costs nothing in proportion
// to n, where splitting costs a slice header (24 bytes) per element.
func CheckBytesElements(data []byte, n int64) error {
	// Every element takes at least its 4-byte prefix.
	if n < 0 || n > int64(len(data)/4) {
		return fmt.Errorf("%d bytes cannot hold %d length-prefixed elements", len(data), n)
	}
	for i := range n {
		if len(data) < 4 {
			return fmt.Errorf("element %d: %d bytes left, too few for its 4-byte length", i, len(data))
		}
		size := binary.LittleEndian.Uint32(data)
		data = data[4:]
		if uint64(size) > uint64(len(data)) {
			return fmt.Errorf("element %d: length %d but only %d bytes left", i, size, len(data))
		}
		data = data[size:]
	}
	if len(data) != 0 {
		return fmt.Errorf("%d bytes after the last of %d elements", len(data), n)
	}
	return nil
}
