package poison

import (
	"encoding/binary"
	"hash/maphash"
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMax is the entry bound New uses when given max < 1.
const DefaultMax = 1024

// sweepEvery is how often Watching drops ended entries, so that a model
// whose bad body stopped coming is no longer hashed.
const sweepEvery = time.Second

// Key identifies one request to one model: a hash of what the caller fed
// a Hasher, and how many bytes it fed through Bytes (the tensors' or the
// body's; names are not counted).
type Key struct {
	Hash uint64
	Len  int
}

// Quarantine counts crashes by request body and refuses the bodies that
// crash too often. Its zero value is not usable: use New. It is safe for
// concurrent use: one mutex, held for map operations only (hashing
// happens outside it), and an empty quarantine answers Watching from an
// atomic count, without it.
type Quarantine struct {
	// seed is random per process (maphash), so a client cannot aim for a
	// collision: a false positive (another body of the same hash and
	// length, which one innocent request pays until the entry ends) comes
	// about entries/2^64 by chance.
	seed maphash.Seed
	max  int
	now  func() time.Time // time.Now; tests move it
	// held is len(entries), read without the lock: a healthy server's
	// requests never take it (Watching).
	held atomic.Int64

	mu          sync.Mutex
	entries     map[Key]*entry
	models      map[string]int   // entries by model, for Watching
	quarantined map[string]int64 // bodies quarantined since New, by model
	runTimeouts map[string]int64 // runs stopped at max_run_time since New, by model
	soloRuns    map[string]int64 // suspects sent to run alone since New, by model
	acquitted   map[string]int64 // suspects cleared by a solo run served, since New, by model
	swept       time.Time
}

type entry struct {
	model   string
	crashes int
	marked  bool      // suspected (Suspected) without a strike
	blocked bool      // quarantined (until ends)
	cleared bool      // acquitted once in this window (Acquit): not again
	ends    time.Time // the crash window's end, or the quarantine's
	touched time.Time // last crash or refusal: the eviction order
}

// New returns an empty quarantine of at most max entries (DefaultMax when
// max < 1).
func New(max int) *Quarantine {
	if max < 1 {
		max = DefaultMax
	}
	return &Quarantine{seed: maphash.MakeSeed(), max: max, now: time.Now,
		entries: map[Key]*entry{}, models: map[string]int{}, quarantined: map[string]int64{},
		runTimeouts: map[string]int64{}, soloRuns: map[string]int64{}, acquitted: map[string]int64{}}
}

// KeyOf is the key of a request to model whose body is taken as it is,
// undecoded: NewHasher's start, the model's name, -1 (where a decoded
// request's key, v2.WriteRequestKey, has its input count, never
// negative) and the body.
func (q *Quarantine) KeyOf(model, identity string, body []byte) Key {
	h := q.NewHasher(identity)
	h.String(model)
	h.Int(-1)
	h.Bytes(body)
	return h.Sum()
}

// NewHasher starts a key with the content identity of the model's file
// (internal/modelid; "" when unknown), for the caller to add the
// request's fields to (v2.WriteRequestKey: the model and its input
// tensors). The identity keeps a quarantine from outliving the weights
// it was struck on: once the model is reloaded from other bytes, the
// same body has another key and is sent again (and struck again if it
// still crashes them).
func (q *Quarantine) NewHasher(identity string) *Hasher {
	h := &Hasher{}
	h.h.SetSeed(q.seed)
	h.String(identity)
	return h
}

// Hasher builds a Key with the quarantine's seed. Every field is written
// with its length, or at a fixed width, so that different sequences of
// fields hash different bytes.
type Hasher struct {
	h   maphash.Hash
	n   int
	buf [8]byte
}

// Int adds a fixed-width integer.
func (h *Hasher) Int(n int64) {
	binary.LittleEndian.PutUint64(h.buf[:], uint64(n))
	_, _ = h.h.Write(h.buf[:])
}

// String adds a length-prefixed string (a name: not counted in Len).
func (h *Hasher) String(s string) {
	h.Int(int64(len(s)))
	_, _ = h.h.WriteString(s)
}

// Bytes adds length-prefixed bytes.
func (h *Hasher) Bytes(p []byte) {
	h.Int(int64(len(p)))
	_, _ = h.h.Write(p)
	h.n += len(p)
}

// Sum is the key of the fields added.
func (h *Hasher) Sum() Key { return Key{Hash: h.h.Sum64(), Len: h.n} }

// Watching says whether model has an entry: only then is an incoming
// request of the model worth hashing.
func (q *Quarantine) Watching(model string) bool {
	if q.held.Load() == 0 {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if now := q.now(); now.Sub(q.swept) >= sweepEvery {
		q.swept = now
		for k, e := range q.entries {
			if !now.Before(e.ends) {
				q.remove(k, e)
			}
		}
	}
	return q.models[model] > 0
}

// Crashed counts a crash of the worker serving k for model. It returns
// true when this crash puts k in quarantine: threshold crashes (at least
// 1) within ttl. A quarantined k stays so until ttl after its last crash.
func (q *Quarantine) Crashed(model string, k Key, threshold int, ttl time.Duration) bool {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.entryFor(model, k, ttl, now)
	e.crashes++
	e.touched = now
	if e.crashes < max(threshold, 1) {
		return false
	}
	fresh := !e.blocked
	e.blocked, e.ends = true, now.Add(ttl)
	if fresh {
		q.quarantined[model]++
	}
	return fresh
}

// entryFor is k's entry at now, a new one (its window ending ttl from
// now) when k has none or its window or quarantine has ended: that one
// counts afresh. q.mu is held.
func (q *Quarantine) entryFor(model string, k Key, ttl time.Duration, now time.Time) *entry {
	e := q.entries[k]
	if e != nil && !now.Before(e.ends) {
		q.remove(k, e)
		e = nil
	}
	if e == nil {
		q.makeRoom(now)
		e = &entry{model: model, ends: now.Add(ttl)}
		q.entries[k] = e
		q.held.Add(1)
		q.models[model]++
	}
	return e
}

// Suspected marks k, sent to model, a suspect without a strike: it was
// at work in a crash beside other work that may have caused it (two
// model runs at once), so the crash proves nothing against it, but its
// next send should run alone, where a crash would. The mark lasts until
// a solo run of it is served (Acquit) or ttl after its window opened;
// it never counts towards the threshold.
func (q *Quarantine) Suspected(model string, k Key, ttl time.Duration) {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.entryFor(model, k, ttl, now)
	e.marked = true
	e.touched = now
}

// RunTimedOut counts a request of model answered because its run outlived
// the model's max_run_time. That is a strike against the request's body,
// like a crash (the caller counts it with Crashed when the quarantine is
// on), and an operator wants it counted whether the quarantine is on or
// not: a model whose runs time out needs a higher bound or a fix.
func (q *Quarantine) RunTimedOut(model string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.runTimeouts[model]++
}

// Standing is what a Quarantine holds against a key now.
type Standing struct {
	// Blocked says the key is quarantined, for Left more.
	Blocked bool
	Left    time.Duration
	// Suspect says the key was struck (Crashed) or marked (Suspected)
	// within its window but is below the threshold: the caller runs it alone, so that a next
	// strike falls on it and not on requests that shared its run.
	Suspect bool
}

// Look says where k stands. A quarantined k counts as touched (a refusal
// keeps it from eviction); a suspect does not.
func (q *Quarantine) Look(k Key) Standing {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.entries[k]
	switch {
	case e == nil || !now.Before(e.ends) || e.crashes == 0 && !e.marked: // none, ended, or acquitted
		return Standing{}
	case !e.blocked:
		return Standing{Suspect: true}
	}
	e.touched = now
	return Standing{Blocked: true, Left: e.ends.Sub(now)}
}

// Blocked says whether k is quarantined, and for how much longer.
func (q *Quarantine) Blocked(k Key) (time.Duration, bool) {
	s := q.Look(k)
	return s.Left, s.Blocked
}

// SoloRun counts a request of model sent to run alone because its body
// is a suspect (Standing.Suspect): what suspects cost in batching.
func (q *Quarantine) SoloRun(model string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.soloRuns[model]++
}

// Acquit clears the strikes against keys (the keys one request of model
// was a suspect by), once a solo run of that request was answered in a
// way that shows its body does not crash a worker nor outlive
// max_run_time: Look no longer tells a suspect, so the caller's next
// send of it is batched again. It counts one acquittal for model when it
// cleared any key, and says so.
//
// A key is acquitted once per window (ttl from its first strike): struck
// again after that, it stays a suspect until the window ends, however
// many of its solo runs are served. So a body that crashes only when
// batched (on some batch shapes, beside some other body) crashes a
// batch at most twice a window, not once for every two sends. A
// quarantined key stays so: its threshold of strikes was counted, and one
// run served does not undo a conviction.
//
// A strike that lands between a suspect's Look and its Acquit (another
// send of the same body, in flight when a worker crashed) is cleared with
// the rest; one that lands after counts one, in the same window.
func (q *Quarantine) Acquit(model string, keys ...Key) bool {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	cleared := false
	for _, k := range keys {
		e := q.entries[k]
		switch {
		case e == nil || e.blocked || e.cleared || e.crashes == 0 && !e.marked:
			continue
		case !now.Before(e.ends): // an ended window acquits nothing
			q.remove(k, e)
			continue
		}
		e.crashes, e.marked, e.cleared, cleared = 0, false, true, true
	}
	if cleared {
		q.acquitted[model]++
	}
	return cleared
}

// Stats is what a Quarantine holds now and has done, by model.
type Stats struct {
	// Quarantined counts the bodies quarantined since New.
	Quarantined map[string]int64
	// Current counts the bodies quarantined now.
	Current map[string]int
	// RunTimeouts counts the requests answered because their run
	// outlived max_run_time (RunTimedOut) since New.
	RunTimeouts map[string]int64
	// SoloRuns counts the suspects' requests sent to run alone (SoloRun)
	// since New.
	SoloRuns map[string]int64
	// Acquitted counts the suspects whose strikes a solo run served
	// cleared (Acquit) since New.
	Acquitted map[string]int64
}

// Refusing is Current without the models at 0; nil when none.
func (s Stats) Refusing() map[string]int {
	var out map[string]int
	for m, n := range s.Current {
		if n > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[m] = n
		}
	}
	return out
}

// Stats returns the counts now.
func (q *Quarantine) Stats() Stats {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	s := Stats{Quarantined: make(map[string]int64, len(q.quarantined)), Current: map[string]int{},
		RunTimeouts: maps.Clone(q.runTimeouts), SoloRuns: maps.Clone(q.soloRuns),
		Acquitted: maps.Clone(q.acquitted)}
	for m, n := range q.quarantined {
		s.Quarantined[m] = n
		s.Current[m] = 0
	}
	for _, e := range q.entries {
		if e.blocked && now.Before(e.ends) {
			s.Current[e.model]++
		}
	}
	return s
}

// Len is the number of entries held, counting or quarantined.
func (q *Quarantine) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.entries)
}

// makeRoom drops the least recently touched entry when the quarantine is
// full. Called with mu held, on a crash only, so a scan of at most max
// entries is cheap next to the worker restart it comes with.
func (q *Quarantine) makeRoom(now time.Time) {
	if len(q.entries) < q.max {
		return
	}
	var oldest Key
	var oldestAt time.Time
	first := true
	for k, e := range q.entries {
		if !now.Before(e.ends) {
			q.remove(k, e)
			continue
		}
		if first || e.touched.Before(oldestAt) {
			oldest, oldestAt, first = k, e.touched, false
		}
	}
	if len(q.entries) >= q.max {
		q.remove(oldest, q.entries[oldest])
	}
}

// remove drops k. Called with mu held.
func (q *Quarantine) remove(k Key, e *entry) {
	delete(q.entries, k)
	q.held.Add(-1)
	if q.models[e.model]--; q.models[e.model] <= 0 {
		delete(q.models, e.model)
	}
}
