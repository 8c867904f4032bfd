package front

import (
	"bytes"
	"os"
	"runtime/debug"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/procinfo"
)

// rssBytes is this process's resident set size (procinfo).
func rssBytes(t *testing.T) int64 {
	t.Helper()
	p, err := procinfo.Read("", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return int64(p.RSS)
}

func TestBodyBufMappedAboveThreshold(t *testing.T) {
	var small, large bodyBuf
	small.alloc(mappedBodyMin - 1)
	large.alloc(max(mappedBodyMin, 1<<20))
	defer large.free()
	if mappedBodyMin > 1 && small.mapped {
		t.Errorf("a buffer of %d bytes (under mappedBodyMin %d) is mapped", mappedBodyMin-1, mappedBodyMin)
	}
	if !large.mapped || len(large.b) != 0 || cap(large.b) != max(mappedBodyMin, 1<<20) {
		t.Fatalf("large buffer: mapped %v len %d cap %d; want mapped, empty, cap %d", large.mapped, len(large.b), cap(large.b), max(mappedBodyMin, 1<<20))
	}
	small.free()
	if small.b != nil || small.mapped {
		t.Errorf("freed buffer not empty: %+v", small)
	}
}

func TestBodyBufGrowCopies(t *testing.T) {
	var bb bodyBuf
	bb.grow(64 << 10)
	want := bytes.Repeat([]byte("0123456789abcdef"), 4<<10)
	bb.b = append(bb.b, want...)
	if cap(bb.b) != 64<<10 {
		t.Fatalf("append within capacity reallocated: cap %d", cap(bb.b))
	}
	bb.grow(2 << 20)
	if !bb.mapped || cap(bb.b) != 2<<20 || !bytes.Equal(bb.b, want) {
		t.Fatalf("after grow: mapped %v cap %d, bytes equal %v; want mapped, cap %d, the same %d bytes",
			bb.mapped, cap(bb.b), bytes.Equal(bb.b, want), 2<<20, len(want))
	}
	bb.b = append(bb.b, 'x')
	bb.grow(4 << 20) // mapping to mapping: the old one is unmapped
	if !bb.mapped || len(bb.b) != len(want)+1 || !bytes.Equal(bb.b[:len(want)], want) || bb.b[len(want)] != 'x' {
		t.Fatalf("after a second grow the bytes differ (len %d)", len(bb.b))
	}
	bb.free()
	bb.free() // a second free does nothing
	if bb.b != nil || bb.mapped {
		t.Fatalf("freed buffer not empty: mapped %v len %d", bb.mapped, len(bb.b))
	}
}

// TestBodyBufFreeDropsRSS: a touched 64 MiB body is resident while held
// and leaves the RSS as soon as it is freed, with no GC in between.
func TestBodyBufFreeDropsRSS(t *testing.T) {
	const size = 64 << 20
	var bb bodyBuf
	bb.alloc(size)
	if !bb.mapped {
		t.Fatal("a 64 MiB body buffer is not mapped")
	}
	// Return the heap's free pages first, so the scavenger does not lower
	// the RSS between the two reads (it did, under a loaded full run).
	debug.FreeOSMemory()
	before := rssBytes(t)
	bb.b = bb.b[:size]
	for i := 0; i < size; i += os.Getpagesize() {
		bb.b[i] = 1
	}
	held := rssBytes(t)
	bb.free()
	after := rssBytes(t)
	if held-before < size*3/4 {
		t.Fatalf("touching 64 MiB raised RSS by only %d MiB", (held-before)>>20)
	}
	if held-after < size*3/4 {
		t.Fatalf("free of a touched 64 MiB buffer lowered RSS by only %d MiB (held %d MiB, after %d MiB)", (held-after)>>20, held>>20, after>>20)
	}
}

// TestBodyBufUntouchedCostsNothing: a mapping's pages cost RSS only once
// written (a client declaring 64 MiB and sending 2 costs 2).
func TestBodyBufUntouchedCostsNothing(t *testing.T) {
	var bb bodyBuf
	before := rssBytes(t)
	bb.alloc(64 << 20)
	defer bb.free()
	bb.b = append(bb.b, make([]byte, 2<<20)...)
	if grew := rssBytes(t) - before; grew > 16<<20 {
		t.Fatalf("a 64 MiB buffer holding 2 MiB raised RSS by %d MiB", grew>>20)
	}
}
