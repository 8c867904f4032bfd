package arena

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
)

// liveness is what /proc says about a claimer.
type liveness int

const (
	unknown liveness = iota // /proc could not be read
	alive
	gone // exited (also a zombie not yet reaped), or its pid was reused
)

// processGone reads /proc/<pid>/stat: no such process, a zombie, or a
// process with another start time than start (when start is known, not 0)
// means the claimer is gone.
func processGone(pid int, start uint64) liveness {
	if pid <= 0 {
		return unknown
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return gone
	}
	if err != nil {
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
