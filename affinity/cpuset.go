package affinity

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MaxCPUs bounds the CPU ids a CPUSet accepts from text: 8192 is the
// largest NR_CPUS the kernel can be built with, so no real list goes
// beyond it, and a typo such as "0-99999999" fails instead of allocating.
const MaxCPUs = 8192

// ErrCPUList is wrapped by every error ParseCPUList returns.
var ErrCPUList = errors.New("invalid CPU list")

// CPUSet is an immutable set of CPU ids. The zero value is the empty set.
// Operations return new sets and never modify their operands, so a CPUSet
// can be shared between goroutines and copied freely.
type CPUSet struct {
	// words is a bitmap, CPU i at bit i%64 of words[i/64]. It never ends
	// in a zero word and is nil when empty, so == on the String and
	// reflect.DeepEqual on sets agree with Equal.
	words []uint64
}

// NewCPUSet returns the set of the given ids. It panics on a negative id,
// which is always a programming error.
func NewCPUSet(ids ...int) CPUSet {
	var w []uint64
	for _, id := range ids {
		if id < 0 {
			panic(fmt.Sprintf("affinity: negative CPU id %d", id))
		}
		for len(w) <= id/64 {
			w = append(w, 0)
		}
		w[id/64] |= 1 << (id % 64)
	}
	return CPUSet{words: trim(w)}
}

func trim(w []uint64) []uint64 {
	for len(w) > 0 && w[len(w)-1] == 0 {
		w = w[:len(w)-1]
	}
	if len(w) == 0 {
		return nil
	}
	return w
}

// ParseCPUList parses the kernel's CPU list format, as found in
// /sys/devices/system/cpu/online and the Cpus_allowed_list line of
// /proc/<pid>/status: comma-separated ids and inclusive ranges, e.g.
// "0-3,8,10-11". The empty string is the empty set. Anything else is an
// error wrapping ErrCPUList: spaces, empty items, signs, reversed ranges,
// ids of MaxCPUs or more. The kernel's stride syntax ("0-7:2/4") is not
// accepted: the kernel never writes it and configs should not need it.
// Overlapping items are allowed ("0-3,2") since they are unambiguous.
func ParseCPUList(s string) (CPUSet, error) {
	if s == "" {
		return CPUSet{}, nil
	}
	var w []uint64
	for _, item := range strings.Split(s, ",") {
		lo, hi, err := parseCPUItem(item)
		if err != nil {
			return CPUSet{}, fmt.Errorf("%w %q: %v", ErrCPUList, s, err)
		}
		for len(w) <= hi/64 {
			w = append(w, 0)
		}
		for id := lo; id <= hi; id++ {
			w[id/64] |= 1 << (id % 64)
		}
	}
	return CPUSet{words: trim(w)}, nil
}

// parseCPUItem parses "N" or "N-M" into an inclusive range.
func parseCPUItem(item string) (lo, hi int, err error) {
	if item == "" {
		return 0, 0, errors.New("empty item")
	}
	first, last, isRange := strings.Cut(item, "-")
	if lo, err = parseCPUID(first); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = parseCPUID(last); err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("range %q ends before it starts", item)
	}
	return lo, hi, nil
}

func parseCPUID(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a CPU id", s)
	}
	id, err := strconv.Atoi(s)
	if err != nil || id >= MaxCPUs {
		return 0, fmt.Errorf("CPU id %q is not below %d", s, MaxCPUs)
	}
	return id, nil
}

// String formats the set in the kernel's CPU list format with the fewest
// items, e.g. "0-3,8,10-11"; the empty set is "". ParseCPUList(s.String())
// equals s.
func (s CPUSet) String() string {
	var b strings.Builder
	ids := s.Slice()
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ids[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ids[j]))
		}
		i = j + 1
	}
	return b.String()
}

// MarshalText writes the CPU list format, so a CPUSet reads naturally in
// JSON and YAML.
func (s CPUSet) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses the CPU list format with ParseCPUList.
func (s *CPUSet) UnmarshalText(text []byte) error {
	set, err := ParseCPUList(string(text))
	if err != nil {
		return err
	}
	*s = set
	return nil
}

// Count returns the number of CPUs in the set.
func (s CPUSet) Count() int {
	n := 0
	for _, w := range s.words {
		n += bits.OnesCount64(w)
	}
	return n
}

// IsEmpty reports whether the set has no CPUs.
func (s CPUSet) IsEmpty() bool { return len(s.words) == 0 }

// Contains reports whether cpu is in the set.
func (s CPUSet) Contains(cpu int) bool {
	return cpu >= 0 && cpu/64 < len(s.words) && s.words[cpu/64]&(1<<(cpu%64)) != 0
}

// Equal reports whether both sets hold the same CPUs.
func (s CPUSet) Equal(o CPUSet) bool {
	if len(s.words) != len(o.words) {
		return false
	}
	for i := range s.words {
		if s.words[i] != o.words[i] {
			return false
		}
	}
	return true
}

// Union returns the CPUs in s or o.
func (s CPUSet) Union(o CPUSet) CPUSet {
	a, b := s.words, o.words
	if len(a) < len(b) {
		a, b = b, a
	}
	w := append([]uint64(nil), a...)
	for i := range b {
		w[i] |= b[i]
	}
	return CPUSet{words: trim(w)}
}

// Intersect returns the CPUs in both s and o.
func (s CPUSet) Intersect(o CPUSet) CPUSet {
	w := make([]uint64, min(len(s.words), len(o.words)))
	for i := range w {
		w[i] = s.words[i] & o.words[i]
	}
	return CPUSet{words: trim(w)}
}

// Minus returns the CPUs in s that are not in o.
func (s CPUSet) Minus(o CPUSet) CPUSet {
	w := append([]uint64(nil), s.words...)
	for i := range w {
		if i < len(o.words) {
			w[i] &^= o.words[i]
		}
	}
	return CPUSet{words: trim(w)}
}

// Slice returns the CPU ids in ascending order; nil for the empty set.
func (s CPUSet) Slice() []int {
	var ids []int
	for i, w := range s.words {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			ids = append(ids, i*64+b)
			w &^= 1 << b
		}
	}
	return ids
}

// First returns the lowest CPU id, or -1 for the empty set.
func (s CPUSet) First() int {
	for i, w := range s.words {
		if w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

// unixCPUs is how many CPUs a unix.CPUSet holds (glibc's CPU_SETSIZE).
const unixCPUs = int(unsafe.Sizeof(unix.CPUSet{})) * 8

// Unix converts the set for sched_setaffinity(2). It fails when the set
// holds a CPU at or beyond unix.CPUSet's fixed size (1024 CPUs).
func (s CPUSet) Unix() (unix.CPUSet, error) {
	var u unix.CPUSet
	for _, id := range s.Slice() {
		if id >= unixCPUs {
			return unix.CPUSet{}, fmt.Errorf("CPU %d of %q does not fit a %d-CPU affinity mask", id, s, unixCPUs)
		}
		u.Set(id)
	}
	return u, nil
}

// CPUSetFromUnix converts a mask returned by sched_getaffinity(2).
func CPUSetFromUnix(u *unix.CPUSet) CPUSet {
	var ids []int
	for id := 0; id < unixCPUs; id++ {
		if u.IsSet(id) {
			ids = append(ids, id)
		}
	}
	return NewCPUSet(ids...)
}

// cpuSetFromWords converts a bitmap of machine words, 64 CPUs each, as
// NVML's nvmlDeviceGetCpuAffinity fills it.
func cpuSetFromWords(words []uint) CPUSet {
	w := make([]uint64, len(words))
	for i, x := range words {
		w[i] = uint64(x)
	}
	return CPUSet{words: trim(w)}
}
