package prep

import (
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/respcache"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

// modelCache is a model's response cache (worker.ResponseCache): the
// segment every prep worker of the host maps.
//
// The lookup comes after the request is decoded into tensors, so a JSON
// request and a binary one with the same tensors share a key, and before
// the hand-off to an infer worker. What is stored is the output tensors
// after postprocessing, in the tensor wire format (tensor.AppendTensors),
// not the encoded V2 response: a hit renders them for the request it
// answers, with its id and its choice of JSON or binary outputs, which are
// therefore not part of the key.
type modelCache struct {
	seg      *respcache.Segment
	ttl      time.Duration
	identity string
}

// openCaches maps the segments of the models with a response cache. A
// segment that cannot be opened is logged: its model serves uncached.
func openCaches(procs []worker.Processing, log zerolog.Logger) map[string]*modelCache {
	out := map[string]*modelCache{}
	for _, p := range procs {
		if p.Cache == nil {
			continue
		}
		seg, err := respcache.Open(p.Cache.Path)
		if err != nil {
			log.Warn().Err(err).Str("model", p.Model).Msg("response cache unavailable; the model serves uncached")
			continue
		}
		out[p.Model] = &modelCache{seg: seg, ttl: p.Cache.TTL, identity: p.Cache.Identity}
	}
	return out
}

// key hashes what changes the answer to req with these inputs: the
// model's identity, every input's name, datatype, shape and bytes, and
// the requested outputs with their classification. Binary or JSON
// outputs, the id, the timeout and the priority change only the
// encoding or the scheduling, not the answer.
func (c *modelCache) key(req *v2.InferRequest, inputs []tensor.Tensor) respcache.Key {
	b := respcache.NewKeyBuilder(c.identity)
	b.Int(int64(len(inputs)))
	for i := range inputs {
		in := &inputs[i]
		b.String(in.Name)
		b.Int(int64(in.DType))
		b.Int(int64(len(in.Shape)))
		for _, d := range in.Shape {
			b.Int(d)
		}
		b.Bytes(in.Data)
	}
	b.Int(int64(len(req.Outputs)))
	for _, o := range req.Outputs {
		b.String(o.Name)
		b.Int(int64(o.Classification))
	}
	return b.Sum()
}

// lookup answers ctx from the cache when it holds the answer to req with
// these inputs, and says whether it did; on a miss it returns the key to
// store the answer under. Hits and misses are counted with the time the
// lookup took. A model without a cache always misses, uncounted.
func (h *handler) lookup(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest, inputs []tensor.Tensor) (respcache.Key, bool) {
	c := m.cache
	if c == nil {
		return respcache.Key{}, false
	}
	start := time.Now()
	k := c.key(req, inputs)
	if payload, ok := c.seg.Get(nil, k, start); ok {
		if outs, err := tensor.ParseTensors(payload); err == nil {
			render(ctx, m, req, outs)
			c.seg.Hit(time.Since(start))
			return k, true
		}
	}
	c.seg.Miss(time.Since(start))
	return k, false
}

// store caches the postprocessed outputs of a successful request.
func (c *modelCache) store(k respcache.Key, outs []tensor.Tensor) {
	if c == nil {
		return
	}
	now := time.Now()
	var expires time.Time
	if c.ttl > 0 {
		expires = now.Add(c.ttl)
	}
	c.seg.Put(k, tensor.AppendTensors(nil, outs), now, expires)
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
