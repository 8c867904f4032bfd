package arena

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Ref names an arena for another process: the prep worker's pid and the
// memfd's descriptor number in it (the infer worker opens
// /proc/<PID>/fd/<FD>), and the random token in the arena's header, which
// tells this arena from a later one at the same pid and descriptor.
type Ref struct {
	PID, FD int
	Token   uint64
}

// Ticket is one use of a slot: the slot's number and the sequence number
// Acquire gave it. Only the infer worker holding the current Ticket can
// claim the slot.
type Ticket struct {
	Slot int
	Seq  uint32
}

// ErrBadRef means a descriptor (Ref or Ticket) is malformed.
var ErrBadRef = errors.New("malformed arena descriptor")

// String is "<pid>:<fd>:<token in hex>", what ParseRef reads.
func (r Ref) String() string {
	return strconv.Itoa(r.PID) + ":" + strconv.Itoa(r.FD) + ":" + strconv.FormatUint(r.Token, 16)
}

func (r Ref) path() string { return fmt.Sprintf("/proc/%d/fd/%d", r.PID, r.FD) }

// ParseRef reads a Ref written by Ref.String.
func ParseRef(s string) (Ref, error) {
	f := strings.Split(s, ":")
	if len(f) != 3 {
		return Ref{}, fmt.Errorf("%w: %q: want <pid>:<fd>:<token>", ErrBadRef, s)
	}
	pid, err1 := strconv.Atoi(f[0])
	fd, err2 := strconv.Atoi(f[1])
	token, err3 := strconv.ParseUint(f[2], 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || pid <= 0 || fd < 0 {
		return Ref{}, fmt.Errorf("%w: %q: want <pid>:<fd>:<token>", ErrBadRef, s)
	}
	return Ref{PID: pid, FD: fd, Token: token}, nil
}

// String is "<slot>:<seq>", what ParseTicket reads.
func (t Ticket) String() string {
	return strconv.Itoa(t.Slot) + ":" + strconv.FormatUint(uint64(t.Seq), 10)
}

// ParseTicket reads a Ticket written by Ticket.String.
func ParseTicket(s string) (Ticket, error) {
	slot, seq, ok := strings.Cut(s, ":")
	i, err1 := strconv.Atoi(slot)
	n, err2 := strconv.ParseUint(seq, 10, 32)
	if !ok || err1 != nil || err2 != nil || i < 0 {
		return Ticket{}, fmt.Errorf("%w: slot %q: want <slot>:<seq>", ErrBadRef, s)
	}
	return Ticket{Slot: i, Seq: uint32(n)}, nil
}

// SlotDescriptor is "<slot>:<seq>:<frame length>": where a request frame
// is and the Ticket that may claim it, as ParseSlotDescriptor reads it.
func SlotDescriptor(t Ticket, n int) string { return t.String() + ":" + strconv.Itoa(n) }

// ParseSlotDescriptor reads a SlotDescriptor.
func ParseSlotDescriptor(s string) (Ticket, int, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return Ticket{}, 0, fmt.Errorf("%w: slot %q: want <slot>:<seq>:<length>", ErrBadRef, s)
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 0 {
		return Ticket{}, 0, fmt.Errorf("%w: slot %q: want <slot>:<seq>:<length>", ErrBadRef, s)
	}
	t, err := ParseTicket(s[:i])
	return t, n, err
}
