package affinity

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ids      []int
	}{
		{"", "", nil},
		{"0", "0", []int{0}},
		{"0-3,8,10-11", "0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}},
		{"3,2,1,0", "0-3", []int{0, 1, 2, 3}},
		{"0-3,2", "0-3", []int{0, 1, 2, 3}},
		{"5-5", "5", []int{5}},
		{"63,64,127-128", "63-64,127-128", []int{63, 64, 127, 128}},
		{"8191", "8191", []int{8191}},
	} {
		set, err := ParseCPUList(tc.in)
		if err != nil {
			t.Errorf("ParseCPUList(%q): %v", tc.in, err)
			continue
		}
		if have := set.String(); have != tc.want {
			t.Errorf("ParseCPUList(%q).String() = %q, want %q", tc.in, have, tc.want)
		}
		if !set.Equal(NewCPUSet(tc.ids...)) || set.Count() != len(tc.ids) {
			t.Errorf("ParseCPUList(%q) = %v, want ids %v", tc.in, set.Slice(), tc.ids)
		}
	}
}

func TestParseCPUListErrors(t *testing.T) {
	for _, in := range []string{
		",", "0,", ",0", "0,,1", "-", "-1", "1-", "3-1", "+1", "0x1", "a", "0 ,1", " 0", "0\n",
		"1-2-3", "0-7:2/4", "8192", "99999999999999999999",
	} {
		if set, err := ParseCPUList(in); !errors.Is(err, ErrCPUList) {
			t.Errorf("ParseCPUList(%q) = %q, %v; want an error wrapping ErrCPUList", in, set, err)
		}
	}
}

func TestCPUSetOperations(t *testing.T) {
	a, b := NewCPUSet(0, 1, 2, 3, 64), NewCPUSet(2, 3, 4, 200)
	for _, tc := range []struct {
		name string
		have CPUSet
		want string
	}{
		{"union", a.Union(b), "0-4,64,200"},
		{"intersect", a.Intersect(b), "2-3"},
		{"minus", a.Minus(b), "0-1,64"},
		{"minus all", b.Minus(b), ""},
		{"disjoint", NewCPUSet(200).Intersect(a), ""},
	} {
		if tc.have.String() != tc.want {
			t.Errorf("%s: have %q, want %q", tc.name, tc.have, tc.want)
		}
	}
	if !a.Contains(64) || a.Contains(65) || a.Contains(-1) || a.Contains(1<<20) {
		t.Errorf("Contains is wrong on %q", a)
	}
	if a.First() != 0 || (CPUSet{}).First() != -1 || !b.Minus(b).Equal(CPUSet{}) {
		t.Errorf("First or Equal is wrong")
	}
	if a.String() != "0-3,64" {
		t.Errorf("operations modified their operand: a = %q", a)
	}
}

func TestCPUSetUnix(t *testing.T) {
	s := NewCPUSet(0, 5, 63, 64, 1023)
	u, err := s.Unix()
	if err != nil {
		t.Fatal(err)
	}
	if u.Count() != 5 || !u.IsSet(1023) {
		t.Errorf("Unix(%q) has %d CPUs", s, u.Count())
	}
	if back := CPUSetFromUnix(&u); !back.Equal(s) {
		t.Errorf("round trip through unix.CPUSet: have %q, want %q", back, s)
	}
	if _, err := NewCPUSet(1024).Unix(); err == nil {
		t.Errorf("Unix() of CPU 1024 succeeded; unix.CPUSet holds 1024 CPUs")
	}
	var empty unix.CPUSet
	if !CPUSetFromUnix(&empty).IsEmpty() {
		t.Errorf("empty mask did not give the empty set")
	}
}

func TestCPUSetText(t *testing.T) {
	var s CPUSet
	if err := s.UnmarshalText([]byte("1-3")); err != nil || s.String() != "1-3" {
		t.Fatalf("UnmarshalText: %q, %v", s, err)
	}
	if b, _ := s.MarshalText(); string(b) != "1-3" {
		t.Errorf("MarshalText = %q", b)
	}
	if err := s.UnmarshalText([]byte("x")); err == nil {
		t.Errorf("UnmarshalText(x) succeeded")
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"", "0", "0-3,8,10-11", "3-1", "0,,1", "8191", "0-7:2/4", "1,0-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := ParseCPUList(s)
		if err != nil {
			if !errors.Is(err, ErrCPUList) {
				t.Fatalf("ParseCPUList(%q) error does not wrap ErrCPUList: %v", s, err)
			}
			return
		}
		out := set.String()
		again, err := ParseCPUList(out)
		if err != nil {
			t.Fatalf("ParseCPUList(%q) failed on String() %q of %q: %v", out, out, s, err)
		}
		if !again.Equal(set) || again.String() != out {
			t.Fatalf("round trip of %q: %q then %q", s, out, again)
		}
		if len(set.Slice()) != set.Count() {
			t.Fatalf("%q: Slice has %d ids, Count says %d", s, len(set.Slice()), set.Count())
		}
	})
}
