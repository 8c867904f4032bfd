package arena

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotSealed means the descriptor names something other than a sealed
// arena memfd: a regular file, a symlink's target, an unsealed memfd.
// Mapping it could fault (SIGBUS) the moment someone truncates it.
var ErrNotSealed = errors.New("not a sealed arena memfd")

// peer is the infer worker's side: what identifies the memfd (for Gone)
// and this process as a claimer.
type peer struct {
	dev, ino uint64
	pid      int
	start    uint64
}

// Open maps the arena ref names (the infer side): it opens
// /proc/<pid>/fd/<fd>, insists on a sealed memfd of exactly the size its
// header describes, with the token ref carries, and only then maps it.
func Open(ref Ref) (*Arena, error) {
	path := ref.path()
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open arena %s (%s): %w", ref, path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat arena %s: %w", ref, err)
	}
	if err := checkSeals(fd, st); err != nil {
		return nil, fmt.Errorf("arena %s (%s): %w", ref, path, err)
	}
	h, err := readHeader(fd, st.Size)
	if err != nil {
		return nil, fmt.Errorf("arena %s: %w", ref, err)
	}
	if h.token != ref.Token {
		return nil, fmt.Errorf("arena %s: %w: token %x, the descriptor says %x (a different arena at that pid and descriptor)", ref, ErrBadHeader, h.token, ref.Token)
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map arena %s: %w", ref, err)
	}
	return &Arena{ref: ref, mem: mem, slots: h.slots, slotBytes: h.slotBytes,
		peer: peer{dev: st.Dev, ino: st.Ino, pid: os.Getpid(), start: selfStart()}}, nil
}

// checkSeals refuses anything but a regular memfd carrying every seal in
// sealedAgainst (F_GET_SEALS fails on files that are not memfds).
func checkSeals(fd int, st unix.Stat_t) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: not a regular file", ErrNotSealed)
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return fmt.Errorf("%w: F_GET_SEALS: %v", ErrNotSealed, err)
	}
	if seals&sealedAgainst != sealedAgainst {
		return fmt.Errorf("%w: seals %#x, want %#x", ErrNotSealed, seals, sealedAgainst)
	}
	return nil
}

// readHeader reads and checks the header with pread, before mapping
// anything.
func readHeader(fd int, size int64) (header, error) {
	b := make([]byte, headerSize)
	if n, err := unix.Pread(fd, b, 0); err != nil || n != headerSize {
		return header{}, fmt.Errorf("%w: %d-byte arena has no full header", ErrBadHeader, size)
	}
	return parseHeader(b, size)
}

// Gone reports whether the prep worker that owns the arena has closed it
// (exited): /proc/<pid>/fd/<fd> no longer leads to this memfd.
func (a *Arena) Gone() bool {
	var st unix.Stat_t
	if err := unix.Stat(a.ref.path(), &st); err != nil {
		return true
	}
	return st.Dev != a.peer.dev || st.Ino != a.peer.ino
}

// ErrNotClaimable means a slot could not be claimed: its owner revoked
// it (the request was given up) or the descriptor is for an earlier use.
var ErrNotClaimable = errors.New("shared-memory slot not claimable")

// Claim takes t's slot for this infer worker (CAS Sent(seq) ->
// Claimed(seq, pid)) and records its start time; only then may the data
// be read. A slot that cannot be claimed must not be touched.
func (a *Arena) Claim(t Ticket) error {
	if err := a.Check(t.Slot); err != nil {
		return err
	}
	if a.peer.pid > maxPID {
		return fmt.Errorf("%w: pid %d does not fit a state word", ErrNotClaimable, a.peer.pid)
	}
	if !a.cas(t.Slot, makeWord(Sent, 0, t.Seq), makeWord(Claimed, a.peer.pid, t.Seq)) {
		w := a.load(t.Slot)
		return fmt.Errorf("%w: slot %d is %v under sequence %d, the request carries %d (revoked by its prep worker, which gave the request up)",
			ErrNotClaimable, t.Slot, w.state(), w.seq(), t.Seq)
	}
	a.claimerStart(t.Slot).Store(a.peer.start)
	return nil
}

// Finish marks t's slot Done (CAS Claimed(seq, pid) -> Done(seq)): this
// infer worker will not touch it again.
func (a *Arena) Finish(t Ticket) {
	a.cas(t.Slot, makeWord(Claimed, a.peer.pid, t.Seq), makeWord(Done, a.peer.pid, t.Seq))
}
