package poison

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// clock is a quarantine's time, moved by the test.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTest(max int) (*Quarantine, *clock) {
	c := &clock{t: time.Unix(1e9, 0)}
	q := New(max)
	q.now = c.now
	return q, c
}

func TestThresholdTTLAndOtherBodies(t *testing.T) {
	q, c := newTest(8)
	bad, good := q.KeyOf("m", "", []byte("bad")), q.KeyOf("m", "", []byte("good"))
	if q.Watching("m") {
		t.Fatal("an empty quarantine watches model m")
	}
	if q.Crashed("m", bad, 2, time.Minute) {
		t.Fatal("one crash quarantined the body with threshold 2")
	}
	if _, ok := q.Blocked(bad); ok || !q.Watching("m") || q.Watching("other") {
		t.Fatalf("after one crash: blocked=%v watching m=%v other=%v, want false true false", ok, q.Watching("m"), q.Watching("other"))
	}
	c.t = c.t.Add(30 * time.Second)
	if !q.Crashed("m", bad, 2, time.Minute) {
		t.Fatal("a second crash within ttl did not quarantine the body")
	}
	if left, ok := q.Blocked(bad); !ok || left != time.Minute {
		t.Fatalf("Blocked = %v %v, want a minute left", left, ok)
	}
	if _, ok := q.Blocked(good); ok {
		t.Fatal("another body is blocked")
	}
	if _, ok := q.Blocked(q.KeyOf("n", "", []byte("bad"))); ok {
		t.Fatal("the same body to another model is blocked")
	}
	if s := q.Stats(); s.Quarantined["m"] != 1 || s.Current["m"] != 1 || s.Refusing()["m"] != 1 {
		t.Fatalf("stats %+v, want m quarantined once, once now", s)
	}
	c.t = c.t.Add(time.Minute)
	if _, ok := q.Blocked(bad); ok {
		t.Fatal("the body is still blocked after ttl")
	}
	c.t = c.t.Add(sweepEvery)
	if q.Watching("m") || q.Len() != 0 || q.held.Load() != 0 {
		t.Fatalf("after ttl: watching=%v entries=%d, want false 0", q.Watching("m"), q.Len())
	}
	if s := q.Stats(); s.Quarantined["m"] != 1 || s.Current["m"] != 0 || s.Refusing() != nil {
		t.Fatalf("stats after ttl %+v, want m quarantined once, none now", s)
	}
}

func TestCrashesOutsideTheWindowStartAgain(t *testing.T) {
	q, c := newTest(8)
	k := q.KeyOf("/p", "", []byte("b"))
	q.Crashed("m", k, 2, time.Minute)
	c.t = c.t.Add(2 * time.Minute)
	if q.Crashed("m", k, 2, time.Minute) {
		t.Fatal("two crashes two minutes apart quarantined the body with a one-minute window")
	}
	if !q.Crashed("m", k, 2, time.Minute) {
		t.Fatal("the next crash within the window did not quarantine it")
	}
}

// TestBounded fills the quarantine past its bound: it never holds more,
// the least recently touched entry goes first, and a blocked body that is
// still refused outlives the entries that only counted a crash.
func TestBounded(t *testing.T) {
	q, c := newTest(4)
	keep := q.KeyOf("/p", "", []byte("keep"))
	q.Crashed("m", keep, 1, time.Hour)
	for i := range 100 {
		c.t = c.t.Add(time.Millisecond)
		q.Blocked(keep)
		q.Crashed("m", q.KeyOf("/p", "", fmt.Appendf(nil, "body %d", i)), 2, time.Hour)
		if n := q.Len(); n > 4 || q.held.Load() != int64(n) {
			t.Fatalf("after %d crashes the quarantine holds %d entries (counted %d), bound 4", i+1, n, q.held.Load())
		}
	}
	if _, ok := q.Blocked(keep); !ok {
		t.Fatal("the most recently refused body was evicted")
	}
	if q.Len() != 4 {
		t.Fatalf("holds %d entries, want 4", q.Len())
	}
}

func TestThresholdOneAndZeroMax(t *testing.T) {
	q := New(0)
	if q.max != DefaultMax {
		t.Fatalf("New(0) bound %d, want %d", q.max, DefaultMax)
	}
	if !q.Crashed("m", q.KeyOf("", "", []byte("x")), 1, time.Minute) {
		t.Fatal("threshold 1: the first crash did not quarantine")
	}
}

// Run timeouts are counted by model, apart from the bodies' strikes.
func TestRunTimeoutsCounted(t *testing.T) {
	q, _ := newTest(8)
	if n := len(q.Stats().RunTimeouts); n != 0 {
		t.Fatalf("a new quarantine reports run timeouts for %d models", n)
	}
	q.RunTimedOut("m")
	q.RunTimedOut("m")
	q.RunTimedOut("other")
	s := q.Stats()
	if s.RunTimeouts["m"] != 2 || s.RunTimeouts["other"] != 1 {
		t.Fatalf("RunTimeouts = %v, want m:2 other:1", s.RunTimeouts)
	}
	if q.Len() != 0 || len(s.Quarantined) != 0 {
		t.Fatalf("counting run timeouts made entries (%d) or quarantines (%v)", q.Len(), s.Quarantined)
	}
}

// TestSuspects: a body struck below the threshold is a suspect, not
// blocked; at the threshold it is blocked, no longer a suspect; after its
// window it is neither. Another body is neither throughout. Solo runs are
// counted by model.
func TestSuspects(t *testing.T) {
	q, c := newTest(8)
	k, other := q.KeyOf("/p", "", []byte("b")), q.KeyOf("/p", "", []byte("o"))
	if s := q.Look(k); s != (Standing{}) {
		t.Fatalf("before any strike: %+v, want nothing", s)
	}
	q.Crashed("m", k, 3, time.Minute)
	q.Crashed("m", k, 3, time.Minute)
	if s := q.Look(k); !s.Suspect || s.Blocked {
		t.Fatalf("two strikes of three: %+v, want a suspect, not blocked", s)
	}
	q.Crashed("m", k, 3, time.Minute)
	if s := q.Look(k); s.Suspect || !s.Blocked || s.Left != time.Minute {
		t.Fatalf("three strikes of three: %+v, want blocked for a minute, no suspect", s)
	}
	if s := q.Look(other); s != (Standing{}) {
		t.Fatalf("another body: %+v, want nothing", s)
	}
	c.t = c.t.Add(time.Minute)
	if s := q.Look(k); s != (Standing{}) {
		t.Fatalf("after its quarantine: %+v, want nothing", s)
	}
	q.Crashed("m", other, 2, time.Minute)
	c.t = c.t.Add(time.Minute)
	if s := q.Look(other); s.Suspect {
		t.Fatal("a strike outside its window still makes a suspect")
	}
	q.SoloRun("m")
	q.SoloRun("m")
	if n := q.Stats().SoloRuns["m"]; n != 2 {
		t.Fatalf("SoloRuns[m] = %d, want 2", n)
	}
}

// TestAcquit: a suspect's strikes are cleared and counted once per call,
// whichever of its keys held them; a quarantined key stays quarantined;
// a key never struck, or whose window ended, acquits nothing; a strike
// after an acquittal counts one, and is not acquitted again until the
// window ends.
func TestAcquit(t *testing.T) {
	q, c := newTest(8)
	k, sent, bad := q.KeyOf("/p", "", []byte("b")), q.KeyOf("/s", "", []byte("b")), q.KeyOf("/p", "", []byte("x"))
	q.Crashed("m", k, 2, time.Minute)
	q.Crashed("m", sent, 2, time.Minute)
	q.Crashed("m", bad, 2, time.Minute)
	q.Crashed("m", bad, 2, time.Minute)
	if !q.Acquit("m", sent, k, bad) {
		t.Fatal("Acquit of two suspects' keys and a quarantined one cleared nothing")
	}
	if s, b := q.Look(k), q.Look(sent); s != (Standing{}) || b != (Standing{}) {
		t.Fatalf("after Acquit: %+v %+v, want nothing against either key", s, b)
	}
	if s := q.Look(bad); !s.Blocked {
		t.Fatalf("a quarantined key after Acquit: %+v, want still blocked", s)
	}
	if q.Acquit("m", k) || q.Acquit("m", q.KeyOf("/p", "", []byte("never"))) {
		t.Fatal("Acquit of a cleared or never struck key says it cleared one")
	}
	q.Crashed("m", k, 2, time.Minute)
	if s := q.Look(k); !s.Suspect {
		t.Fatalf("a strike after the acquittal: %+v, want a suspect (one strike, not two)", s)
	}
	if q.Acquit("m", k) || !q.Look(k).Suspect {
		t.Fatal("a key struck again after its acquittal was acquitted again within its window")
	}
	if n := q.Stats().Acquitted["m"]; n != 1 {
		t.Fatalf("Acquitted[m] = %d, want 1", n)
	}
	c.t = c.t.Add(time.Minute)
	if q.Acquit("m", k) {
		t.Fatal("Acquit of an ended window says it cleared one")
	}
	q.Crashed("m", k, 2, time.Minute)
	if !q.Acquit("m", k) || q.Look(k).Suspect {
		t.Fatal("a strike in a new window after an acquittal in the last was not acquitted")
	}
}

// TestAcquitRacesStrikes: sends of one suspect acquitted while others'
// crashes strike it leave the books straight (held, models and entries
// agree), whatever the order, and at most one acquittal counted in the
// window.
func TestAcquitRacesStrikes(t *testing.T) {
	q := New(8)
	k := q.KeyOf("/p", "", []byte("shared"))
	q.Crashed("m", k, 1000, time.Minute)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if i%2 == 0 {
					q.Crashed("m", k, 1000, time.Minute)
				} else {
					q.Acquit("m", k)
				}
			}
		}()
	}
	wg.Wait()
	n := q.Len()
	if n != 1 || q.held.Load() != 1 || !q.Watching("m") {
		t.Fatalf("after racing strikes and acquittals: %d entries, held %d, watching %v; want 1, 1, true",
			n, q.held.Load(), q.Watching("m"))
	}
	if a := q.Stats().Acquitted["m"]; a != 1 {
		t.Fatalf("Acquitted[m] = %d, want 1: once a window", a)
	}
}

// TestHasherFieldsDoNotRun: fields are written with their lengths, so
// moving a byte from one field to the next changes the key; a name
// (String) is not counted in Len.
func TestHasherFieldsDoNotRun(t *testing.T) {
	q := New(8)
	key := func(fields ...string) Key {
		h := q.NewHasher("")
		h.String("m")
		for _, f := range fields {
			h.Bytes([]byte(f))
		}
		return h.Sum()
	}
	if a, b := key("ab", "c"), key("a", "bc"); a == b {
		t.Fatalf("fields ab|c and a|bc share key %+v", a)
	}
	if k := key("ab", "c"); k.Len != 3 || k != key("ab", "c") {
		t.Fatalf("key %+v: want Len 3 and the same key for the same fields", k)
	}
}

// TestKeyCarriesTheModelIdentity: the same body to the same model has
// another key under another content identity of the model's file, so a
// quarantine struck on one set of weights does not refuse the body once
// the model is reloaded from others; and the identity is a field of its
// own, not run into the model's name.
func TestKeyCarriesTheModelIdentity(t *testing.T) {
	q, _ := newTest(8)
	a, b := q.KeyOf("m", "sha256:a", []byte("bad")), q.KeyOf("m", "sha256:b", []byte("bad"))
	if a == b {
		t.Fatalf("one body under two identities of m: both %+v", a)
	}
	if !q.Crashed("m", a, 1, time.Minute) {
		t.Fatal("a crash at threshold 1 did not quarantine")
	}
	if _, ok := q.Blocked(a); !ok {
		t.Fatal("the body is not refused under the identity it was struck on")
	}
	if _, ok := q.Blocked(b); ok {
		t.Fatal("the body is refused under the model's new identity")
	}
	if q.KeyOf("m", "x", nil) == q.KeyOf("xm", "", nil) || q.KeyOf("m", "x", []byte("b")).Len != 1 {
		t.Fatal("the identity runs into the model's name, or counts in Len")
	}
}

// TestSuspectedMarksWithoutAStrike: a mark makes a suspect that no number
// of marks quarantines; its solo run served acquits it once a window; a
// strike after a mark counts one.
func TestSuspectedMarksWithoutAStrike(t *testing.T) {
	q, c := newTest(8)
	k := q.KeyOf("m", "", []byte("b"))
	for range 5 {
		q.Suspected("m", k, time.Minute)
	}
	if s := q.Look(k); !s.Suspect || s.Blocked {
		t.Fatalf("after five marks: %+v, want a suspect, never blocked", s)
	}
	if !q.Watching("m") {
		t.Fatal("a marked body's model is not watched")
	}
	if !q.Acquit("m", k) || q.Look(k).Suspect {
		t.Fatal("a marked body's solo run served did not acquit it")
	}
	q.Suspected("m", k, time.Minute)
	if q.Acquit("m", k) || !q.Look(k).Suspect {
		t.Fatal("a body marked again after its acquittal was acquitted again within its window")
	}
	c.t = c.t.Add(time.Minute)
	q.Suspected("m", k, time.Minute)
	if q.Crashed("m", k, 2, time.Minute) || !q.Look(k).Suspect {
		t.Fatal("a mark then a strike of two quarantined the body, or left no suspect")
	}
	if !q.Crashed("m", k, 2, time.Minute) {
		t.Fatal("a second strike after a mark did not quarantine the body")
	}
}
