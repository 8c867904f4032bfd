package respcache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrLayout: the file is not a response cache segment of this layout.
var ErrLayout = errors.New("not a response cache segment of this version")

const (
	magic      = 0x3165686361637372 // "rscache1", little-endian
	headerSize = 4096
	slotSize   = 16
	bucketWays = 4
	// MinBytes is the smallest ring a segment has.
	MinBytes = 64 << 10
)

// The segment layout. A segment is a header (magic, sizes, the write head,
// the hit and miss counters), an index of 16-byte slots and a ring of
// max_bytes. An entry is a record appended to the ring: its 32-byte key,
// its expiry, its length, a SHA-256 of all three and the payload, then the
// payload. The index maps a key to the ring position of its newest record:
// the key's first 8 bytes pick a bucket of 4 slots, each holding a tag
// (those 8 bytes) and a position.

// header is the start of a segment. Every field after the sizes is
// accessed atomically.
type header struct {
	magic      uint64
	ringBytes  uint64
	indexSlots uint64
	head       uint64 // logical bytes ever claimed in the ring
	hits       uint64
	hitNanos   uint64
	misses     uint64
	missNanos  uint64
}

// slot is one index entry: tag is the key's first 8 bytes, pos the ring
// position of the record plus one (0: empty), its top bit the renewing
// mark (claimRenewal).
type slot struct {
	tag uint64
	pos uint64
}

// Segment is one model's mapped cache. Its methods are safe for concurrent
// use by goroutines and processes.
type Segment struct {
	path  string
	mem   []byte
	hdr   *header
	index []slot
	ring  []byte
}

// indexSlotsFor sizes the index: a slot per KiB of ring, at least 256,
// a power of two.
func indexSlotsFor(ringBytes int64) int {
	n := 256
	for int64(n)*1024 < ringBytes {
		n *= 2
	}
	return n
}

// Create makes a fresh, empty segment of maxBytes (at least MinBytes) at
// path, replacing any file there (workers that mapped it keep the old one).
func Create(path string, maxBytes int64) (*Segment, error) {
	maxBytes = max(maxBytes, MinBytes)
	slots := indexSlotsFor(maxBytes)
	size := headerSize + int64(slots)*slotSize + maxBytes
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("create response cache %q: %w", path, err)
	}
	defer f.Close()
	tmp := f.Name()
	s, err := createIn(f, path, size, maxBytes, slots)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		if s != nil {
			s.Close()
		}
		return nil, fmt.Errorf("create response cache %q: %w", path, err)
	}
	return s, nil
}

func createIn(f *os.File, path string, size, ringBytes int64, slots int) (*Segment, error) {
	if err := f.Truncate(size); err != nil {
		return nil, err
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	h := (*header)(unsafe.Pointer(&mem[0]))
	h.ringBytes, h.indexSlots = uint64(ringBytes), uint64(slots)
	atomic.StoreUint64(&h.magic, magic)
	return view(path, mem), nil
}

// Open maps the segment at path, made by Create.
func Open(path string) (*Segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open response cache %q: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open response cache %q: %w", path, err)
	}
	if fi.Size() < headerSize {
		return nil, fmt.Errorf("open response cache %q: %w", path, ErrLayout)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("open response cache %q: %w", path, err)
	}
	if h := (*header)(unsafe.Pointer(&mem[0])); atomic.LoadUint64(&h.magic) != magic || !fits(h, uint64(fi.Size())) {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("open response cache %q: %w; remove it and restart the master", path, ErrLayout)
	}
	return view(path, mem), nil
}

// fits says h's sizes lay out a file of size exactly. Each part is bounded
// by size before they are added, so sizes that wrap round in 64 bits are
// refused, not laid out past the mapping's end.
func fits(h *header, size uint64) bool {
	slots, ring := h.indexSlots, h.ringBytes
	if slots == 0 || slots%bucketWays != 0 || slots > size/slotSize || ring > size {
		return false
	}
	return headerSize+slots*slotSize+ring == size
}

// view lays a segment's parts over its mapping.
func view(path string, mem []byte) *Segment {
	h := (*header)(unsafe.Pointer(&mem[0]))
	idx := unsafe.Slice((*slot)(unsafe.Pointer(&mem[headerSize])), h.indexSlots)
	ringAt := headerSize + int(h.indexSlots)*slotSize
	return &Segment{path: path, mem: mem, hdr: h, index: idx, ring: mem[ringAt : ringAt+int(h.ringBytes)]}
}

// Path is the segment's file.
func (s *Segment) Path() string { return s.path }

// MaxBytes is the ring's size: the most bytes the cache's entries hold.
func (s *Segment) MaxBytes() int64 { return int64(len(s.ring)) }

// Close unmaps the segment. It must not be used afterwards.
func (s *Segment) Close() {
	if s != nil && s.mem != nil {
		_ = unix.Munmap(s.mem)
		s.mem = nil
	}
}

// Remove closes the segment and removes its file.
func (s *Segment) Remove() {
	if s == nil {
		return
	}
	s.Close()
	_ = os.Remove(s.path)
}
