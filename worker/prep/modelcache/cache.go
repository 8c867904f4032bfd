package modelcache

import (
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/respcache"
	"github.com/supervisor-dev/supervisor/internal/respredis"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

// Cache is a model's response cache (worker.ResponseCache): the
// segment every prep worker of the host maps.
//
// The lookup comes after the request is decoded into tensors, so a JSON
// request and a binary one with the same tensors share a key, and before
// the hand-off to an infer worker. An image model is looked up before its
// images are decoded, under a key of the image bytes the client sent
// (imageKey): the decode is most of such a request's cost, so a hit that
// still paid it would save little. What is stored is the output tensors
// after postprocessing, in the tensor wire format (tensor.AppendTensors),
// not the encoded V2 response: a hit renders them for the request it
// answers, with its id and its choice of JSON or binary outputs, which are
// therefore not part of the key.
//
// A key has two parts: what the prep worker decides of the answer (the
// model's name and processing settings, the request's one key, its
// requested outputs: key, imageKey), and the content identity of the
// model file that computes it (internal/modelid). An answer is stored
// under the identity its infer worker sent with it (worker.ModelIDHeader),
// never under the one this prep worker was told: during a reload old prep
// workers talk to new infer workers, and a restarted infer worker loads
// whatever the file holds, so an answer stored under the identity the
// prep worker believed would be served, after a rollback, for weights
// that never computed it. Lookups use the identity of the last answer
// (the master's until one comes), so a hit is always an answer of that
// model.
//
// With Redis configured it is a two-level cache: the local segment first,
// then Redis (internal/respredis), whose hits fill the local segment; an
// answer is stored in both. Redis alone is not offered: the local lookup
// costs microseconds and spares Redis every repeated request.
type Cache struct {
	seg      *respcache.Segment
	redis    *respredis.Client // nil: local only
	ttl      time.Duration
	identity string // the model's name and processing settings
	model    string // the model's name, the one key's model part
	// current is the model identity lookups use: the spec's, then the
	// last one an infer worker answered with.
	current atomic.Pointer[string]
}

// Request is the part of a cache key the prep worker decides (Key,
// ImageKey), hashed once so that the answer can be stored under another
// model identity than its lookup's without hashing the tensors again.
type Request respcache.Key

// Open maps the segments of the models with a response cache. A
// segment that cannot be opened is logged: its model serves uncached.
// Models that name the same Redis share one client, so the worker holds
// one connection pool and one bound on background SETs per server, not
// per model.
func Open(procs []worker.Processing, log zerolog.Logger) map[string]*Cache {
	out := map[string]*Cache{}
	redises := map[string]*respredis.Client{}
	for _, p := range procs {
		if p.Cache == nil {
			continue
		}
		seg, err := respcache.Open(p.Cache.Path)
		if err != nil {
			log.Warn().Err(err).Str("model", p.Model).Msg("response cache unavailable; the model serves uncached")
			continue
		}
		c := &Cache{seg: seg, ttl: p.Cache.TTL, identity: p.Cache.Identity, model: p.Model}
		c.current.Store(&p.Cache.Model)
		if url := p.Cache.Redis; url != "" {
			if _, seen := redises[url]; !seen {
				if redises[url], err = respredis.New(url, log); err != nil {
					log.Warn().Err(err).Str("model", p.Model).Msg("response cache: no Redis; the local cache alone serves")
				}
			}
			c.redis = redises[url]
		}
		out[p.Model] = c
	}
	return out
}

// Key hashes what the prep worker decides of the answer to req with
// these inputs: the model's name and processing settings, the request's
// one key (v2.WriteRequestKey: the model's name and every input's name,
// datatype, shape and bytes, as the poison quarantine keys it), and the
// requested outputs with their classification. Binary or JSON outputs,
// the id, the timeout and the priority change only the encoding or the
// scheduling, not the answer.
func (c *Cache) Key(req *v2.InferRequest, inputs []tensor.Tensor) Request {
	b := respcache.NewKeyBuilder(c.identity)
	v2.WriteRequestKey(b, c.model, inputs)
	return keyOutputs(b, req)
}

// ImageKey is an image model's key, taken before decoding: the model's
// name and settings, the images as sent (each one's bytes with its
// length, after any base64: a JSON request carries them as base64
// strings, a binary one and a raw image body as raw bytes, and all three
// share the key), and the requested outputs. The input's name and
// datatype are the model's one BYTES input and its shape is the image
// count, so they add nothing; the preprocess settings (size, resize,
// interpolation, channel order, scale, mean, std, layout, dtype) are in
// the identity, so a reload that changes them changes the key. The
// leading -1, where key has the model name's length, keeps image keys
// apart from key's.
func (c *Cache) ImageKey(req *v2.InferRequest, images [][]byte) Request {
	b := respcache.NewKeyBuilder(c.identity)
	b.Int(-1)
	b.Int(int64(len(images)))
	for _, img := range images {
		b.Bytes(img)
	}
	return keyOutputs(b, req)
}

// keyOutputs ends a key with req's requested outputs and their
// classification.
func keyOutputs(b *respcache.KeyBuilder, req *v2.InferRequest) Request {
	v2.WriteOutputsKey(b, req.Outputs)
	return Request(b.Sum())
}

// At is the key of r's answer as computed by the model file of identity
// model (internal/modelid).
func (r Request) At(model string) respcache.Key {
	b := respcache.NewKeyBuilder(model)
	b.Bytes(r[:])
	return b.Sum()
}

// Get finds k's outputs in the local segment, then in Redis (waiting no
// later than deadline, the zero time for none); a Redis hit that parses is
// copied into the local segment (one that does not would shadow Redis
// there as a local entry that always misses).
func (c *Cache) Get(k respcache.Key, now, deadline time.Time) ([]tensor.Tensor, bool) {
	if payload, ok := c.seg.Get(nil, k, now); ok {
		outs, err := tensor.ParseTensors(payload)
		return outs, err == nil
	}
	payload, ok := c.redis.Get(k, deadline, c.seg.MaxEntry())
	if !ok {
		return nil, false
	}
	outs, err := tensor.ParseTensors(payload)
	if err != nil {
		return nil, false
	}
	c.seg.Put(k, payload, now, c.expiry(now))
	return outs, true
}

// expiry is when an entry stored now expires; the zero time without a TTL.
func (c *Cache) expiry(now time.Time) time.Time {
	if c.ttl <= 0 {
		return time.Time{}
	}
	return now.Add(c.ttl)
}

// Segment is the local segment: its counters, hits and misses.
func (c *Cache) Segment() *respcache.Segment { return c.seg }

// SetCurrent makes model the identity lookups use, as an answer of that
// model's does.
func (c *Cache) SetCurrent(model string) { c.current.Store(&model) }

// CurrentModel is the model identity lookups use.
func (c *Cache) CurrentModel() string {
	if p := c.current.Load(); p != nil {
		return *p
	}
	return ""
}

// Store caches the postprocessed outputs of a successful request under
// the identity of the model that computed them (worker.ModelIDHeader),
// and makes it the one later lookups use. An answer without one (an
// infer worker that did not say, or an image request whose chunks two
// models computed) is not stored.
func (c *Cache) Store(r Request, model string, outs []tensor.Tensor) {
	if c == nil || model == "" {
		return
	}
	if c.CurrentModel() != model {
		c.current.Store(&model)
	}
	now := time.Now()
	k := r.At(model)
	payload := tensor.AppendTensors(nil, outs)
	c.seg.Put(k, payload, now, c.expiry(now))
	c.redis.Set(k, payload, c.ttl, c.seg.MaxEntry())
}

// AddStats adds the model's cache hits and misses to its statistics.
func (c *Cache) AddStats(s *batch.Stats) {
	if c == nil {
		return
	}
	st := c.seg.Stats()
	s.InferenceStats.CacheHit = batch.Duration{Count: st.Hits, NS: st.HitNanos}
	s.InferenceStats.CacheMiss = batch.Duration{Count: st.Misses, NS: st.MissNanos}
}
