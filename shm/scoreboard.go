package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Errors Open and OpenReadOnly return (wrapped, with the path) for a file
// that is not a board this binary can use.
var (
	// ErrNotScoreboard: the file is not a supervisor scoreboard (wrong
	// magic, or sizes inconsistent with its layout version).
	ErrNotScoreboard = errors.New("not a supervisor scoreboard")
	// ErrVersion: a scoreboard of another layout version, written by a
	// different supervisor binary.
	ErrVersion = errors.New("scoreboard layout version mismatch")
	// ErrTruncated: the file is shorter than its header says.
	ErrTruncated = errors.New("scoreboard file truncated")
)

// Scoreboard is a mapped board file. Its methods may be called from any
// goroutine, except Close and Remove, which must not race with any other
// use of the board or of its Slots.
type Scoreboard struct {
	path     string
	data     []byte
	hdr      *headerLayout
	slots    []Slot
	readOnly bool
	dev, ino uint64 // identity of the mapped file, for Remove
}

// Header is the board's header.
type Header struct {
	Version     uint32
	Slots       int
	MasterPID   int
	Generation  uint64
	MasterStart time.Time
}

// Create makes a new board at path with slots free slots, readable and
// writable by its owner only (0600), and maps it read-write. The file is
// written under a temporary name in the same directory and renamed over
// path, replacing any previous board; processes that still map the old one
// keep a valid mapping of the unlinked file.
func Create(path string, slots int, masterPID int, generation uint64) (*Scoreboard, error) {
	if slots < 1 || slots > MaxSlots {
		return nil, fmt.Errorf("create scoreboard %q: %d slots, want 1..%d", path, slots, MaxSlots)
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("create scoreboard %q: %w", path, err)
	}
	tmp := f.Name()
	defer f.Close()
	b, err := createIn(f, path, slots, masterPID, generation)
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("create scoreboard %q: %w", path, err)
	}
	return b, nil
}

// createIn sizes, maps and initialises the temporary file f.
func createIn(f *os.File, path string, slots, masterPID int, generation uint64) (*Scoreboard, error) {
	size := headerSize + slots*slotSize
	if err := f.Truncate(int64(size)); err != nil {
		return nil, fmt.Errorf("create scoreboard %q: %w", path, err)
	}
	b, err := mapFile(f, path, size, false)
	if err != nil {
		return nil, err
	}
	h := b.hdr
	h.version = LayoutVersion
	h.headerSize = uint32(headerSize)
	h.slotSize = uint32(slotSize)
	h.slotCount = uint32(slots)
	h.masterPID = int64(masterPID)
	h.startNanos = time.Now().UnixNano()
	atomic.StoreUint64(&h.generation, generation)
	atomic.StoreUint64(&h.magic, magic)
	b.initSlots(slots)
	return b, nil
}

// Open maps an existing board read-write, for a worker to update its slot.
// It fails with ErrNotScoreboard, ErrVersion or ErrTruncated (wrapped) when
// the file is not a usable board.
func Open(path string) (*Scoreboard, error) { return open(path, false) }

// OpenReadOnly maps an existing board read-only, for status and metrics
// readers; it needs only read permission on the file and nothing from the
// master. Slot panics on a read-only board; use Snapshot.
func OpenReadOnly(path string) (*Scoreboard, error) { return open(path, true) }

func open(path string, readOnly bool) (*Scoreboard, error) {
	flag := os.O_RDWR
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, fmt.Errorf("open scoreboard: %w (is the supervisor running?)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open scoreboard %q: %w", path, err)
	}
	if fi.Size() < int64(headerSize) {
		return nil, fmt.Errorf("open scoreboard %q: %d bytes, shorter than the %d-byte header: %w", path, fi.Size(), headerSize, ErrTruncated)
	}
	b, err := mapFile(f, path, int(min(fi.Size(), int64(headerSize+MaxSlots*slotSize))), readOnly)
	if err != nil {
		return nil, err
	}
	n, err := validate(b.hdr, fi.Size())
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("open scoreboard %q: %w", path, err)
	}
	b.initSlots(n)
	return b, nil
}

// validate checks a mapped header against the file size and returns the
// slot count.
func validate(h *headerLayout, size int64) (int, error) {
	if m := atomic.LoadUint64(&h.magic); m != magic {
		return 0, fmt.Errorf("%w: magic %#016x, want %#016x", ErrNotScoreboard, m, magic)
	}
	if h.version != LayoutVersion {
		return 0, fmt.Errorf("%w: file has version %d, this binary reads version %d (use the supervisor binary that runs the master)", ErrVersion, h.version, LayoutVersion)
	}
	if int(h.headerSize) != headerSize || int(h.slotSize) != slotSize {
		return 0, fmt.Errorf("%w: header/slot size %d/%d, version %d has %d/%d", ErrNotScoreboard, h.headerSize, h.slotSize, LayoutVersion, headerSize, slotSize)
	}
	n := int(h.slotCount)
	if n < 1 || n > MaxSlots {
		return 0, fmt.Errorf("%w: slot count %d, want 1..%d", ErrNotScoreboard, n, MaxSlots)
	}
	want := int64(headerSize + n*slotSize)
	if size < want {
		return 0, fmt.Errorf("%w: %d bytes, %d slots need %d", ErrTruncated, size, n, want)
	}
	if size > want {
		return 0, fmt.Errorf("%w: %d bytes, %d slots need exactly %d", ErrNotScoreboard, size, n, want)
	}
	return n, nil
}

// mapFile maps the first size bytes of f, shared.
func mapFile(f *os.File, path string, size int, readOnly bool) (*Scoreboard, error) {
	prot := unix.PROT_READ | unix.PROT_WRITE
	if readOnly {
		prot = unix.PROT_READ
	}
	data, err := unix.Mmap(int(f.Fd()), 0, size, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map scoreboard %q: %w", path, err)
	}
	b := &Scoreboard{path: path, data: data, readOnly: readOnly}
	b.hdr = (*headerLayout)(unsafe.Pointer(&data[0]))
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err == nil {
		b.dev, b.ino = st.Dev, st.Ino
	}
	return b, nil
}

func (b *Scoreboard) initSlots(n int) {
	b.slots = make([]Slot, n)
	for i := range b.slots {
		b.slots[i].l = (*slotLayout)(unsafe.Pointer(&b.data[headerSize+i*slotSize]))
	}
}

// Path returns the path the board was created or opened at.
func (b *Scoreboard) Path() string { return b.path }

// Header returns the board's header.
func (b *Scoreboard) Header() Header {
	h := b.hdr
	return Header{
		Version:     h.version,
		Slots:       len(b.slots),
		MasterPID:   int(h.masterPID),
		Generation:  atomic.LoadUint64(&h.generation),
		MasterStart: timeOf(h.startNanos),
	}
}

// SetGeneration records the master's current generation (after a reload or
// upgrade); slots claimed under an older one become Stale.
func (b *Scoreboard) SetGeneration(g uint64) { atomic.StoreUint64(&b.hdr.generation, g) }

// logLevelSet marks the header's log level word as set, so that level 0
// (zerolog's debug) is told apart from a word never written.
const logLevelSet = int64(1) << 32

// SetLogLevel records the level every worker is to log at (a
// zerolog.Level: -1 trace to 7 disabled); workers read it with LogLevel.
// A header word, not a per-worker message, so that a worker spawned later
// (a restart, a recycle, a surge) starts at it too.
func (b *Scoreboard) SetLogLevel(level int8) {
	atomic.StoreInt64(&b.hdr.logLevel, logLevelSet|int64(uint8(level)))
}

// LogLevel returns the level SetLogLevel recorded; ok is false while none
// has been.
func (b *Scoreboard) LogLevel() (level int8, ok bool) {
	w := atomic.LoadInt64(&b.hdr.logLevel)
	if w&logLevelSet == 0 {
		return 0, false
	}
	return int8(uint8(w)), true
}

// Len returns the number of slots.
func (b *Scoreboard) Len() int { return len(b.slots) }

// Slot returns slot i for writing. It panics if i is out of range or the
// board was opened read-only (writing would fault).
func (b *Scoreboard) Slot(i int) *Slot {
	if b.readOnly {
		panic("shm: Slot on a read-only scoreboard")
	}
	return &b.slots[i]
}

// Snapshot copies every slot, free ones included, in index order. It never
// blocks writers.
func (b *Scoreboard) Snapshot() []SlotSnapshot {
	out := make([]SlotSnapshot, len(b.slots))
	for i := range b.slots {
		out[i] = b.slots[i].snapshot(i)
	}
	return out
}

// SlotSnapshot copies slot i. It panics if i is out of range.
func (b *Scoreboard) SlotSnapshot(i int) SlotSnapshot { return b.slots[i].snapshot(i) }

// Close unmaps the board. The Scoreboard and its Slots must not be used
// afterwards. Close is idempotent.
func (b *Scoreboard) Close() error {
	if b.data == nil {
		return nil
	}
	err := unix.Munmap(b.data)
	b.data, b.hdr, b.slots = nil, nil, nil
	if err != nil {
		return fmt.Errorf("unmap scoreboard %q: %w", b.path, err)
	}
	return nil
}

// Remove deletes the board's file, if the path still names this board (a
// newer master may have replaced it), and closes the board.
func (b *Scoreboard) Remove() error {
	var st unix.Stat_t
	err := unix.Stat(b.path, &st)
	if err == nil && st.Dev == b.dev && st.Ino == b.ino {
		err = os.Remove(b.path)
	}
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("remove scoreboard %q: %w", b.path, err)
	}
	return nil
}
