package arena

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// liveness is what /proc says about a claimer.
type liveness int

const (
	unknown liveness = iota // /proc could not be read
	alive
	gone // exited (also a zombie not yet reaped), or its pid was reused
)

// processGone asks the kernel about a claimer: no such process
// (kill(pid, 0) fails with ESRCH), a zombie, or a process with another
// start time than start (when start is known, not 0) in /proc/<pid>/stat
// means it is gone. A process /proc hides (hidepid) is unknown, not gone.
func processGone(pid int, start uint64) liveness {
	if pid <= 0 {
		return unknown
	}
	if errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
		return gone
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		// Exited between the two looks, or hidden: only a second kill
		// tells which.
		if errors.Is(err, fs.ErrNotExist) && errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			return gone
		}
		return unknown
	}
	state, started, ok := parseStat(b)
	switch {
	case !ok:
		return unknown
	case state == 'Z' || state == 'X' || (start != 0 && started != start):
		return gone
	}
	return alive
}

// parseStat reads the state (field 3) and start time (field 22) of a
// /proc/<pid>/stat line. The command (field 2) may hold spaces and
// parentheses, so fields are counted from its last ')'.
func parseStat(b []byte) (state byte, start uint64, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, false
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	return f[0][0], start, err == nil
}

// selfStart is this process's start time, as processGone compares it.
func selfStart() uint64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	_, start, _ := parseStat(b)
	return start
}
