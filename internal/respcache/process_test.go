package respcache

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// childEnv names the segment a re-executed test binary writes to.
const childEnv = "RESPCACHE_TEST_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(writeForever(path))
	}
	os.Exit(m.Run())
}

// payloadOf is the one right answer of key i.
func payloadOf(i int) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 100+i*13) }

// writeForever is the child: it stores every key's payload in a loop until
// killed (bounded by a minute, should the parent die first).
func writeForever(path string) int {
	s, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	deadline := time.Now().Add(time.Minute)
	for i := 0; time.Now().Before(deadline); i++ {
		now := time.Now()
		s.Put(key(fmt.Sprint(i%200)), payloadOf(i%200), now, time.Time{})
	}
	return 0
}

// TestProcessesNeverWrong has child processes write a small ring
// concurrently and get SIGKILLed mid-write, while this process reads: every
// hit must be its key's payload, and new writes must keep working after
// the kills (no lock was left held).
func TestProcessesNeverWrong(t *testing.T) {
	s := newSegment(t, MinBytes)
	var children []*exec.Cmd
	for range 3 {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), childEnv+"="+s.Path())
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, c)
	}
	defer func() {
		for _, c := range children {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	hits := 0
	for r := range 200000 {
		i := r % 200
		if got, ok := s.Get(nil, key(fmt.Sprint(i)), time.Now()); ok {
			hits++
			if !bytes.Equal(got, payloadOf(i)) {
				t.Fatalf("key %d answered %d bytes that are not its payload", i, len(got))
			}
		}
		if r == 100000 {
			_ = children[0].Process.Kill() // mid-write, most likely
		}
	}
	if hits == 0 {
		t.Fatal("no hit at all: the children's writes never showed")
	}
	for _, c := range children {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	now := time.Now()
	if !s.Put(key("after"), []byte("x"), now, time.Time{}) {
		t.Fatal("a write after the writers were killed failed")
	}
	if got, ok := s.Get(nil, key("after"), now); !ok || string(got) != "x" {
		t.Fatal("a write after the writers were killed cannot be read")
	}
	t.Logf("%d hits in 200000 reads", hits)
}
