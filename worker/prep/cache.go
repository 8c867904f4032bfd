package prep

import (
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/respcache"
	"github.com/supervisor-dev/supervisor/internal/respredis"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

// modelCache is a model's response cache (worker.ResponseCache): the
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
// With Redis configured it is a two-level cache: the local segment first,
// then Redis (internal/respredis), whose hits fill the local segment; an
// answer is stored in both. Redis alone is not offered: the local lookup
// costs microseconds and spares Redis every repeated request.
type modelCache struct {
	seg      *respcache.Segment
	redis    *respredis.Client // nil: local only
	ttl      time.Duration
	identity string
	model    string // the model's name, the one key's model part
}

// openCaches maps the segments of the models with a response cache. A
// segment that cannot be opened is logged: its model serves uncached.
// Models that name the same Redis share one client, so the worker holds
// one connection pool and one bound on background SETs per server, not
// per model.
func openCaches(procs []worker.Processing, log zerolog.Logger) map[string]*modelCache {
	out := map[string]*modelCache{}
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
		c := &modelCache{seg: seg, ttl: p.Cache.TTL, identity: p.Cache.Identity, model: p.Model}
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

// key hashes what changes the answer to req with these inputs: the
// model's identity, the request's one key (v2.WriteRequestKey: the
// model's name and every input's name, datatype, shape and bytes, as the
// poison quarantine keys it), and the requested outputs with their
// classification. Binary or JSON outputs, the id, the timeout and the
// priority change only the encoding or the scheduling, not the answer.
func (c *modelCache) key(req *v2.InferRequest, inputs []tensor.Tensor) respcache.Key {
	b := respcache.NewKeyBuilder(c.identity)
	v2.WriteRequestKey(b, c.model, inputs)
	return keyOutputs(b, req)
}

// imageKey is an image model's key, taken before decoding: the model's
// identity, the images as sent (each one's bytes with its length, after
// any base64: a JSON request carries them as base64 strings, a binary one
// and a raw image body as raw bytes, and all three share the key), and
// the requested outputs. The input's name and datatype are the model's one
// BYTES input and its shape is the image count, so they add nothing; the
// preprocess settings (size, resize, interpolation, channel order, scale,
// mean, std, layout, dtype) are in the identity, so a reload that changes
// them changes the key. The leading -1, never an input count, keeps image
// keys apart from key's.
func (c *modelCache) imageKey(req *v2.InferRequest, images [][]byte) respcache.Key {
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
func keyOutputs(b *respcache.KeyBuilder, req *v2.InferRequest) respcache.Key {
	v2.WriteOutputsKey(b, req.Outputs)
	return b.Sum()
}

// lookup answers ctx from the cache when it holds the answer to req with
// these inputs, and says whether it did; on a miss it returns the key to
// store the answer under. Hits and misses are counted with the time the
// lookup took. A model without a cache always misses, uncounted.
func (h *handler) lookup(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest, inputs []tensor.Tensor) (respcache.Key, bool) {
	return h.lookupBy(ctx, m, req, func(c *modelCache) respcache.Key { return c.key(req, inputs) })
}

// lookupImages is lookup for an image model's request, before its images
// are decoded: a hit decodes nothing.
func (h *handler) lookupImages(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest, images [][]byte) (respcache.Key, bool) {
	return h.lookupBy(ctx, m, req, func(c *modelCache) respcache.Key { return c.imageKey(req, images) })
}

// lookupBy is lookup with the key that keyOf computes; its time counts
// as the lookup's.
func (h *handler) lookupBy(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest, keyOf func(*modelCache) respcache.Key) (respcache.Key, bool) {
	c := m.cache
	if c == nil {
		return respcache.Key{}, false
	}
	start := time.Now()
	k := keyOf(c)
	var deadline time.Time // the client's, when the master passed one
	if d, ok := clientBudget(&ctx.Request.Header); ok {
		deadline = start.Add(d)
	}
	if outs, ok := c.get(k, start, deadline); ok {
		c.seg.Hit(time.Since(start)) // the lookup's time, not the response's
		h.renderGated(ctx, m, req, outs)
		return k, true
	}
	c.seg.Miss(time.Since(start))
	return k, false
}

// get finds k's outputs in the local segment, then in Redis (waiting no
// later than deadline, the zero time for none); a Redis hit that parses is
// copied into the local segment (one that does not would shadow Redis
// there as a local entry that always misses).
func (c *modelCache) get(k respcache.Key, now, deadline time.Time) ([]tensor.Tensor, bool) {
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
func (c *modelCache) expiry(now time.Time) time.Time {
	if c.ttl <= 0 {
		return time.Time{}
	}
	return now.Add(c.ttl)
}

// store caches the postprocessed outputs of a successful request.
func (c *modelCache) store(k respcache.Key, outs []tensor.Tensor) {
	if c == nil {
		return
	}
	now := time.Now()
	payload := tensor.AppendTensors(nil, outs)
	c.seg.Put(k, payload, now, c.expiry(now))
	c.redis.Set(k, payload, c.ttl, c.seg.MaxEntry())
}

// cacheStats adds the model's cache hits and misses to its statistics.
func (c *modelCache) cacheStats(s *batch.Stats) {
	if c == nil {
		return
	}
	st := c.seg.Stats()
	s.InferenceStats.CacheHit = batch.Duration{Count: st.Hits, NS: st.HitNanos}
	s.InferenceStats.CacheMiss = batch.Duration{Count: st.Misses, NS: st.MissNanos}
}
