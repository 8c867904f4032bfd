package arena

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// The arena header: magic, slot count, slot size (data bytes, a multiple
// of 8), token; padded to headerSize. All little-endian.
const (
	magic      = "SVARENA2"
	headerSize = 64
	// maxSlots and maxSlotBytes bound what a header may claim, far above
	// what the config allows (4096 slots, 1GiB each), so that a crafted
	// header cannot make an infer worker map absurd sizes.
	maxSlots     = 1 << 16
	maxSlotBytes = 1 << 32
)

// ErrBadHeader means an arena's header is not one this package wrote for
// the arena's size: a different file, or a crafted or damaged header.
var ErrBadHeader = errors.New("bad arena header")

// header is the decoded arena header.
type header struct {
	slots, slotBytes int
	token            uint64
}

func (h header) put(b []byte) {
	copy(b, magic)
	binary.LittleEndian.PutUint64(b[8:], uint64(h.slots))
	binary.LittleEndian.PutUint64(b[16:], uint64(h.slotBytes))
	binary.LittleEndian.PutUint64(b[24:], h.token)
}

// arenaSize is the size of an arena of slots slots of slotBytes bytes,
// or false when the numbers are out of bounds or the product overflows.
func arenaSize(slots, slotBytes uint64) (int, bool) {
	if slots == 0 || slots > maxSlots || slotBytes == 0 || slotBytes > maxSlotBytes || slotBytes%8 != 0 {
		return 0, false
	}
	hi, per := bits.Mul64(slots, slotHeader+slotBytes)
	total, carry := bits.Add64(per, headerSize, 0)
	if hi != 0 || carry != 0 || total > uint64(maxInt) {
		return 0, false
	}
	return int(total), true
}

const maxInt = int(^uint(0) >> 1)

// parseHeader decodes b, the first headerSize bytes of an arena whose
// file is size bytes long, and checks that the header describes exactly
// that size.
func parseHeader(b []byte, size int64) (header, error) {
	if len(b) < headerSize || string(b[:len(magic)]) != magic {
		return header{}, fmt.Errorf("%w: no arena magic", ErrBadHeader)
	}
	slots, slotBytes := binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:])
	total, ok := arenaSize(slots, slotBytes)
	if !ok {
		return header{}, fmt.Errorf("%w: %d slots of %d bytes is out of bounds", ErrBadHeader, slots, slotBytes)
	}
	if int64(total) != size {
		return header{}, fmt.Errorf("%w: %d slots of %d bytes need %d bytes, the arena has %d", ErrBadHeader, slots, slotBytes, total, size)
	}
	return header{slots: int(slots), slotBytes: int(slotBytes), token: binary.LittleEndian.Uint64(b[24:])}, nil
}
