package arena

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// sealedFile is a sealed memfd of size bytes starting with hdr, named as a
// Ref the way a prep worker would name it.
func sealedFile(t *testing.T, hdr []byte, size int, seals int) Ref {
	t.Helper()
	fd, err := unix.MemfdCreate("arena-test", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Pwrite(fd, hdr, 0); err != nil {
		t.Fatal(err)
	}
	if seals != 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
			t.Fatal(err)
		}
	}
	return Ref{PID: os.Getpid(), FD: fd, Token: 7}
}

func craftedHeader(slots, slotBytes uint64) []byte {
	b := make([]byte, headerSize)
	copy(b, magic)
	binary.LittleEndian.PutUint64(b[8:], slots)
	binary.LittleEndian.PutUint64(b[16:], slotBytes)
	binary.LittleEndian.PutUint64(b[24:], 7)
	return b
}

// TestOpenRefusesCraftedHeaders: a 128-byte arena whose header claims
// sizes that overflow, or that do not match the file, is refused, never
// mapped (the old code multiplied them unchecked and panicked).
func TestOpenRefusesCraftedHeaders(t *testing.T) {
	for _, c := range []struct {
		name             string
		slots, slotBytes uint64
	}{
		{"product overflows", 1 << 40, 1 << 40},
		{"product wraps to the file size", 1 << 63, 8 + 1<<59},
		{"slot size not 8-aligned", 1, 128 - headerSize - slotHeader - 1},
		{"zero slots", 0, 8},
		{"too big for the file", 4, 1 << 20},
		{"smaller than the file", 1, 8},
	} {
		ref := sealedFile(t, craftedHeader(c.slots, c.slotBytes), 128, sealedAgainst)
		if a, err := Open(ref); !errors.Is(err, ErrBadHeader) {
			if a != nil {
				a.Close()
			}
			t.Errorf("%s (%d slots of %d bytes): %v, want ErrBadHeader", c.name, c.slots, c.slotBytes, err)
		}
	}
	// The header is exact for the file, the token is someone else's.
	ref := sealedFile(t, craftedHeader(1, 128-headerSize-slotHeader), 128, sealedAgainst)
	if a, err := Open(ref); err != nil {
		t.Fatalf("a well-formed 128-byte arena: %v", err)
	} else {
		a.Close()
	}
	ref.Token++
	if _, err := Open(ref); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("a wrong token: %v, want ErrBadHeader", err)
	}
}

// TestArenaCannotBeTruncated: the owner's memfd refuses to shrink or grow,
// whoever tries, through its own descriptor or reopened via /proc; and an
// infer worker refuses an unsealed memfd, which could be.
func TestArenaCannotBeTruncated(t *testing.T) {
	owner, peer := testArena(t, 2, 64)
	for _, size := range []int64{0, 64, 1 << 20} {
		if err := unix.Ftruncate(owner.Ref().FD, size); !errors.Is(err, syscall.EPERM) {
			t.Errorf("ftruncate of the arena to %d: %v, want EPERM", size, err)
		}
		if err := os.Truncate(owner.Ref().path(), size); !errors.Is(err, syscall.EPERM) {
			t.Errorf("truncate of %s to %d: %v, want EPERM", owner.Ref().path(), size, err)
		}
	}
	tk, _ := owner.Acquire(soon())
	if err := peer.Claim(tk); err != nil { // the mapping is still whole
		t.Fatal(err)
	}
	hdr := craftedHeader(1, 128-headerSize-slotHeader)
	for _, seals := range []int{0, unix.F_SEAL_GROW | unix.F_SEAL_SEAL, unix.F_SEAL_SHRINK | unix.F_SEAL_GROW} {
		if _, err := Open(sealedFile(t, hdr, 128, seals)); !errors.Is(err, ErrNotSealed) {
			t.Errorf("a memfd with seals %#x: %v, want ErrNotSealed", seals, err)
		}
	}
}

// TestOpenRefusesFilesAndSymlinks: a descriptor that leads to a regular
// file (a pre-existing /dev/shm file, or one reached through a symlink)
// is refused, however arena-like its contents.
func TestOpenRefusesFilesAndSymlinks(t *testing.T) {
	dir := t.TempDir()
	if _, err := os.Stat("/dev/shm"); err == nil {
		dir = "/dev/shm"
	}
	path := filepath.Join(dir, "supervisor-arena-test-"+strconv.Itoa(os.Getpid())+".arena")
	body := append(craftedHeader(1, 128-headerSize-slotHeader), make([]byte, 128-headerSize)...)
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	link := filepath.Join(t.TempDir(), "arena-link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, link, "/etc/passwd"} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		ref := Ref{PID: os.Getpid(), FD: int(f.Fd()), Token: 7}
		if _, err := Open(ref); !errors.Is(err, ErrNotSealed) {
			t.Errorf("Open of %s via %s: %v, want ErrNotSealed", p, ref.path(), err)
		}
		f.Close()
	}
	if _, err := Open(Ref{PID: os.Getpid(), FD: 1 << 20, Token: 7}); err == nil {
		t.Error("a descriptor number nobody has was opened")
	}
}

// FuzzParseHeader: no header panics the parser, and one it accepts
// describes exactly the size given.
func FuzzParseHeader(f *testing.F) {
	f.Add(craftedHeader(1, 48), int64(128))
	f.Add(craftedHeader(1<<40, 1<<40), int64(128))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		h, err := parseHeader(b, size)
		if err != nil {
			return
		}
		if total, ok := arenaSize(uint64(h.slots), uint64(h.slotBytes)); !ok || int64(total) != size {
			t.Fatalf("accepted %d slots of %d bytes for %d bytes", h.slots, h.slotBytes, size)
		}
	})
}

func TestParseStat(t *testing.T) {
	line := "123 (a) b) (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 20 21\n"
	state, start, ok := parseStat([]byte(line))
	if !ok || state != 'S' || start != 4242 {
		t.Fatalf("parseStat: %c %d %v, want S 4242 true", state, start, ok)
	}
	if _, _, ok := parseStat([]byte("123 (x) S 1 2")); ok {
		t.Fatal("a short stat line was parsed")
	}
}

// TestProcessGone: this process is alive under its own start time and
// gone under another (a reused pid); a reaped child is gone.
func TestProcessGone(t *testing.T) {
	me, start := os.Getpid(), selfStart()
	if start == 0 {
		t.Fatal("no start time in /proc/self/stat")
	}
	if l := processGone(me, start); l != alive {
		t.Fatalf("this process: %v, want alive", l)
	}
	if l := processGone(me, start+1); l != gone {
		t.Fatalf("this pid under another start time: %v, want gone", l)
	}
	if l := processGone(0, 0); l != unknown {
		t.Fatalf("pid 0: %v, want unknown", l)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if l := processGone(cmd.Process.Pid, 0); l != gone {
		t.Fatalf("a reaped child: %v, want gone", l)
	}
}
