package respcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
)

// Key is a request's cache key: a SHA-256 (see KeyBuilder).
type Key [sha256.Size]byte

// recordHeader is a record's key, expiry (Unix nanoseconds, 0 = never),
// payload length and SHA-256 of those three and the payload.
const recordHeader = sha256.Size + 8 + 8 + sha256.Size

// MaxEntry is the largest payload the segment caches: a sixteenth of the
// ring, so one entry never evicts more than that.
func (s *Segment) MaxEntry() int { return len(s.ring)/16 - recordHeader }

// Eviction. The ring is the eviction policy: a log-structured FIFO where a
// writer claims the next len(record) bytes by compare-and-swap on the head
// (a 64-bit logical position that only grows), so a new record overwrites
// the oldest ones. The bytes held are the ring's size, max_bytes, and
// never more, whatever the entries' sizes; no entry is larger than
// max_bytes/16 (Put refuses it). A hit on an entry in the oldest quarter
// of the ring appends it again (a second chance, as CLOCK gives), so a hot
// entry is not evicted by a stream of one-off requests; of concurrent
// hits, only the one that marks the entry's index slot first appends it.
// An index slot whose bucket is full takes the place of the oldest record
// of the bucket.

// Concurrency and crashes. There is no lock, so a process that dies
// mid-write leaves nothing held. A writer owns its claimed bytes until the
// ring wraps onto them, and publishes the record's position in the index
// only after writing it. A reader copies the record out, then checks (1)
// the head has not moved more than the ring's size past the record (no
// writer can have claimed its bytes since), (2) the key in the record is
// the key it looks up, (3) the checksum matches and (4) the expiry has not
// passed. A record that fails any of these is a miss: a torn, overwritten
// or half-written entry (a writer that died, or one that stalled until the
// ring lapped it and then wrote over a newer record) is never returned.
// The checksum is SHA-256, so a torn record that passes it would be a
// SHA-256 collision.

// Get returns a copy of the payload stored under k and not expired at now,
// appended to dst; ok is false on a miss (never stored, evicted, expired,
// or torn: see the package doc). A fault of the mapping is a miss too.
func (s *Segment) Get(dst []byte, k Key, now time.Time) (out []byte, ok bool) {
	if s == nil {
		return dst, false
	}
	var r found
	_ = shm.Guard(func() { out, r, ok = s.get(dst, k, now) })
	if !ok {
		return dst, false
	}
	// A second chance: append an entry about to be evicted again, once.
	if head := atomic.LoadUint64(&s.hdr.head); head-r.pos > uint64(len(s.ring))*3/4 && s.claimRenewal(r) {
		s.Put(k, out[len(dst):], now, r.expires)
	}
	return out, true
}

// renewing, set in a slot's pos, marks a record whose second chance one
// reader has claimed; readers ignore it. Without it every concurrent hit
// on an old entry would append a copy: a burst of them (entries of up to
// MaxBytes/16 each) could flush the whole ring.
const renewing = 1 << 63

// claimRenewal marks r's slot as renewing; false when another reader has,
// or a writer has since pointed the slot elsewhere. A reader that dies
// after claiming leaves the mark: the entry is served until evicted, with
// no second chance.
func (s *Segment) claimRenewal(r found) bool {
	p := r.pos + 1
	return atomic.CompareAndSwapUint64(r.slot, p, p|renewing)
}

// found is where a validated record was (its ring position, its index
// slot's pos) and when it expires (the zero time: never).
type found struct {
	pos     uint64
	slot    *uint64
	expires time.Time
}

// get finds k's record and copies it out.
func (s *Segment) get(dst []byte, k Key, now time.Time) ([]byte, found, bool) {
	tag := binary.LittleEndian.Uint64(k[:8])
	b := s.bucket(tag)
	for i := range b {
		if atomic.LoadUint64(&b[i].tag) != tag {
			continue
		}
		p := atomic.LoadUint64(&b[i].pos) &^ renewing
		if p == 0 {
			continue
		}
		if out, exp, ok := s.read(dst, k, p-1, now); ok {
			return out, found{pos: p - 1, slot: &b[i].pos, expires: exp}, true
		}
	}
	return dst, found{}, false
}

// read copies the record at logical position pos out and validates it;
// it returns the record's expiry with it.
func (s *Segment) read(dst []byte, k Key, pos uint64, now time.Time) ([]byte, time.Time, bool) {
	ringLen := uint64(len(s.ring))
	off := pos % ringLen
	if !s.live(pos, ringLen) || off+recordHeader > ringLen {
		return dst, time.Time{}, false
	}
	var hdr [recordHeader]byte
	copy(hdr[:], s.ring[off:])
	n := binary.LittleEndian.Uint64(hdr[sha256.Size+8:])
	if n > ringLen-off-recordHeader || !bytes.Equal(hdr[:sha256.Size], k[:]) {
		return dst, time.Time{}, false
	}
	start := len(dst)
	dst = append(dst, s.ring[off+recordHeader:off+recordHeader+n]...)
	// The copy is valid only if no writer has claimed these bytes since.
	if !s.live(pos, ringLen) || checksum(hdr[:sha256.Size+16], dst[start:]) != Key(hdr[sha256.Size+16:]) {
		return dst[:start], time.Time{}, false
	}
	var expires time.Time
	if exp := int64(binary.LittleEndian.Uint64(hdr[sha256.Size:])); exp != 0 {
		if expires = time.Unix(0, exp); !now.Before(expires) {
			return dst[:start], time.Time{}, false
		}
	}
	return dst, expires, true
}

// live says no writer has claimed the ring bytes at pos since it was
// written: the head is at most a ring's length past it.
func (s *Segment) live(pos, ringLen uint64) bool {
	return atomic.LoadUint64(&s.hdr.head) <= pos+ringLen
}

// Put stores payload under k until expires (the zero time: no expiry). A
// payload larger than MaxEntry is not stored. Put never blocks and never
// fails the caller: at worst the entry is lost.
func (s *Segment) Put(k Key, payload []byte, now, expires time.Time) bool {
	if s == nil || len(payload) > s.MaxEntry() || (!expires.IsZero() && !now.Before(expires)) {
		return false
	}
	stored := false
	_ = shm.Guard(func() { stored = s.put(k, payload, expires) })
	return stored
}

func (s *Segment) put(k Key, payload []byte, expires time.Time) bool {
	n := uint64(recordHeader + len(payload))
	pos := s.claim(n)
	off := pos % uint64(len(s.ring))
	rec := s.ring[off : off+n]
	copy(rec, k[:])
	var exp int64
	if !expires.IsZero() {
		exp = expires.UnixNano()
	}
	binary.LittleEndian.PutUint64(rec[sha256.Size:], uint64(exp))
	binary.LittleEndian.PutUint64(rec[sha256.Size+8:], uint64(len(payload)))
	copy(rec[recordHeader:], payload)
	sum := checksum(rec[:sha256.Size+16], payload)
	copy(rec[sha256.Size+16:], sum[:])
	if !s.live(pos, uint64(len(s.ring))) {
		return false // lapped while writing: the bytes are someone else's
	}
	s.publish(binary.LittleEndian.Uint64(k[:8]), pos)
	return true
}

// claim reserves n contiguous ring bytes at the head; a record never wraps
// around the ring's end, so the tail that cannot hold it is skipped.
func (s *Segment) claim(n uint64) uint64 {
	ringLen := uint64(len(s.ring))
	for {
		old := atomic.LoadUint64(&s.hdr.head)
		start := old
		if start%ringLen+n > ringLen {
			start += ringLen - start%ringLen
		}
		if atomic.CompareAndSwapUint64(&s.hdr.head, old, start+n) {
			return start
		}
	}
}

// publish points the index at the record at pos: the slot of the same tag,
// else an empty one, else the one with the oldest record.
func (s *Segment) publish(tag, pos uint64) {
	b := s.bucket(tag)
	victim := 0
	for i := range b {
		p := atomic.LoadUint64(&b[i].pos) &^ renewing
		if atomic.LoadUint64(&b[i].tag) == tag || p == 0 {
			victim = i
			break
		}
		if p < atomic.LoadUint64(&b[victim].pos)&^renewing {
			victim = i
		}
	}
	// Readers compare the whole key in the record, so a tag and a
	// position from two different writers are a miss, not a wrong answer.
	atomic.StoreUint64(&b[victim].pos, 0)
	atomic.StoreUint64(&b[victim].tag, tag)
	atomic.StoreUint64(&b[victim].pos, pos+1)
}

// bucket is the index's bucket of tag.
func (s *Segment) bucket(tag uint64) []slot {
	buckets := uint64(len(s.index)) / bucketWays
	i := (tag % buckets) * bucketWays
	return s.index[i : i+bucketWays]
}

// checksum is the SHA-256 of a record's fixed fields and payload.
func checksum(fixed, payload []byte) Key {
	h := sha256.New()
	h.Write(fixed)
	h.Write(payload)
	var k Key
	h.Sum(k[:0])
	return k
}
