package respcache

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenRefusesLyingSizes: a segment file whose header claims sizes
// that, added up in 64 bits, wrap round to the file's size (a file
// rewritten by a faulty or hostile process of the workers' user) is
// refused with ErrLayout, not mapped with an index or ring past its end.
func TestOpenRefusesLyingSizes(t *testing.T) {
	const size = headerSize + 256*slotSize + MinBytes
	for name, sizes := range map[string][2]uint64{
		"index slots wrap": {1 << 60, MinBytes + 256*slotSize},
		"sum wraps":        {1<<59 + (size-headerSize)/slotSize, 1 << 63},
	} {
		path := filepath.Join(t.TempDir(), "seg")
		hdr := make([]byte, size)
		binary.LittleEndian.PutUint64(hdr[0:], magic)
		binary.LittleEndian.PutUint64(hdr[8:], sizes[1])
		binary.LittleEndian.PutUint64(hdr[16:], sizes[0])
		if err := os.WriteFile(path, hdr, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path)
		if !errors.Is(err, ErrLayout) {
			s.Close()
			t.Errorf("%s: Open = %v, want ErrLayout", name, err)
		}
	}
}
