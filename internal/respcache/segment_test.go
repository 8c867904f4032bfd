package respcache

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func newSegment(t testing.TB, maxBytes int64) *Segment {
	t.Helper()
	s, err := Create(filepath.Join(t.TempDir(), "seg"), maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Remove)
	return s
}

func key(parts ...string) Key {
	b := NewKeyBuilder("model")
	for _, p := range parts {
		b.String(p)
	}
	return b.Sum()
}

func TestHitReturnsStoredPayload(t *testing.T) {
	s := newSegment(t, MinBytes)
	now := time.Now()
	want := []byte("the first answer")
	if !s.Put(key("a"), want, now, time.Time{}) {
		t.Fatal("Put refused a small entry")
	}
	got, ok := s.Get(nil, key("a"), now)
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("Get = %q, %v; want %q", got, ok, want)
	}
	if _, ok := s.Get(nil, key("b"), now); ok {
		t.Fatal("a different key hit")
	}
}

func TestOpenSharesEntries(t *testing.T) {
	s := newSegment(t, MinBytes)
	o, err := Open(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	now := time.Now()
	s.Put(key("a"), []byte("x"), now, time.Time{})
	if got, ok := o.Get(nil, key("a"), now); !ok || string(got) != "x" {
		t.Fatalf("second mapping: Get = %q, %v", got, ok)
	}
	o.Hit(time.Millisecond)
	if st := s.Stats(); st.Hits != 1 || st.HitNanos != uint64(time.Millisecond) {
		t.Fatalf("stats = %+v; want the other mapping's hit", st)
	}
}

func TestKeyFieldsAreFramed(t *testing.T) {
	if key("ab", "c") == key("a", "bc") {
		t.Fatal("field boundaries do not change the key")
	}
	a, b := NewKeyBuilder("m"), NewKeyBuilder("m")
	a.Int(2)
	a.Int(3)
	b.Int(6)
	if a.Sum() == b.Sum() {
		t.Fatal("shape [2,3] and [6] share a key")
	}
}

func TestTTLExpires(t *testing.T) {
	s := newSegment(t, MinBytes)
	now := time.Now()
	s.Put(key("a"), []byte("x"), now, now.Add(time.Minute))
	if _, ok := s.Get(nil, key("a"), now.Add(59*time.Second)); !ok {
		t.Fatal("miss before the TTL")
	}
	if _, ok := s.Get(nil, key("a"), now.Add(time.Minute)); ok {
		t.Fatal("hit at the TTL")
	}
}

func TestTooLargeIsNotCached(t *testing.T) {
	s := newSegment(t, MinBytes)
	if s.Put(key("a"), make([]byte, s.MaxEntry()+1), time.Now(), time.Time{}) {
		t.Fatal("an entry over MaxEntry was stored")
	}
}

func TestEvictionStaysWithinMaxBytes(t *testing.T) {
	s := newSegment(t, MinBytes)
	now := time.Now()
	payload := bytes.Repeat([]byte{7}, 1000)
	n := 4 * MinBytes / len(payload)
	for i := range n {
		s.Put(key(fmt.Sprint(i)), payload, now, time.Time{})
	}
	st := s.Stats()
	if st.BytesUsed > MinBytes || st.BytesLimit != MinBytes {
		t.Fatalf("bytes used %d, limit %d; want at most %d", st.BytesUsed, st.BytesLimit, MinBytes)
	}
	if _, ok := s.Get(nil, key("0"), now); ok {
		t.Fatal("the oldest entry survived four rings of writes")
	}
	if got, ok := s.Get(nil, key(fmt.Sprint(n-1)), now); !ok || !bytes.Equal(got, payload) {
		t.Fatal("the newest entry was evicted")
	}
	hits := 0
	for i := range n {
		if _, ok := s.Get(nil, key(fmt.Sprint(i)), now); ok {
			hits++
		}
	}
	if held := hits * (len(payload) + recordHeader); held > MinBytes {
		t.Fatalf("%d entries hold %d bytes, over %d", hits, held, MinBytes)
	}
}

func TestSecondChanceKeepsHotEntry(t *testing.T) {
	s := newSegment(t, MinBytes)
	now := time.Now()
	s.Put(key("hot"), []byte("h"), now, time.Time{})
	payload := make([]byte, 500)
	for i := range 8 * MinBytes / len(payload) {
		s.Put(key(fmt.Sprint(i)), payload, now, time.Time{})
		if _, ok := s.Get(nil, key("hot"), now); !ok {
			t.Fatalf("hot entry evicted after %d one-off writes", i)
		}
	}
}

// TestConcurrentNeverWrong has writers overwrite a tiny ring while readers
// look up: every hit must be the payload of its own key.
func TestConcurrentNeverWrong(t *testing.T) {
	s := newSegment(t, MinBytes)
	o, err := Open(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	const keys, rounds = 64, 3000
	payloadOf := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 200+i*37) }
	var wg sync.WaitGroup
	var mu sync.Mutex
	hits, wrong := 0, 0
	for g := range 8 {
		seg := s
		if g%2 == 1 {
			seg = o
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			now := time.Now()
			var buf []byte
			for r := range rounds {
				i := (r*7 + g) % keys
				if r%2 == 0 {
					seg.Put(key(fmt.Sprint(i)), payloadOf(i), now, time.Time{})
					continue
				}
				got, ok := seg.Get(buf[:0], key(fmt.Sprint(i)), now)
				mu.Lock()
				if ok {
					hits++
					if !bytes.Equal(got, payloadOf(i)) {
						wrong++
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wrong > 0 || hits == 0 {
		t.Fatalf("%d wrong answers in %d hits", wrong, hits)
	}
}

func TestTornRecordIsAMiss(t *testing.T) {
	s := newSegment(t, MinBytes)
	now := time.Now()
	s.Put(key("a"), []byte("payload"), now, time.Time{})
	s.ring[recordHeader] ^= 1 // a writer died, or was lapped, mid-copy
	if got, ok := s.Get(nil, key("a"), now); ok {
		t.Fatalf("torn record answered %q", got)
	}
}

// TestSecondChanceKeepsTTL: an entry written again on a hit keeps its
// expiry.
func TestSecondChanceKeepsTTL(t *testing.T) {
	s := newSegment(t, MinBytes)
	now := time.Now()
	s.Put(key("hot"), []byte("h"), now, now.Add(time.Minute))
	payload := make([]byte, 500)
	for i := range 4 * MinBytes / len(payload) {
		s.Put(key(fmt.Sprint(i)), payload, now, time.Time{})
		s.Get(nil, key("hot"), now)
	}
	if _, ok := s.Get(nil, key("hot"), now.Add(time.Minute)); ok {
		t.Fatal("an entry written again outlived its TTL")
	}
	if _, ok := s.Get(nil, key("hot"), now); !ok {
		t.Fatal("the hot entry was evicted")
	}
}

// TestConcurrentHitsRenewOnce: many readers hitting at once an entry of
// MaxEntry bytes in the ring's oldest quarter append it again once, not
// once each (which would evict a sixteenth of the ring per reader).
func TestConcurrentHitsRenewOnce(t *testing.T) {
	s := newSegment(t, MinBytes)
	now := time.Now()
	big := bytes.Repeat([]byte("b"), s.MaxEntry())
	s.Put(key("hot"), big, now, time.Time{})
	small := make([]byte, 500)
	for i := 0; s.hdr.head < uint64(MinBytes)*7/8; i++ {
		s.Put(key(fmt.Sprint(i)), small, now, time.Time{})
	}
	before := s.hdr.head
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if got, ok := s.Get(nil, key("hot"), now); !ok || !bytes.Equal(got, big) {
				t.Error("the hot entry missed")
			}
		}()
	}
	close(start)
	wg.Wait()
	if grew, one := s.hdr.head-before, uint64(recordHeader+len(big)); grew > one+uint64(MinBytes/16) {
		t.Fatalf("32 concurrent hits appended %d bytes, want one record (%d) and at most a skipped tail", grew, one)
	} else if grew < one {
		t.Fatalf("the old entry was not appended again (%d bytes)", grew)
	}
}
