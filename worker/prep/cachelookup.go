package prep

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker/prep/modelcache"
	"github.com/supervisor-dev/supervisor/worker/prep/schedule"
)

// lookup answers ctx from the cache when it holds the answer to req with
// these inputs, and says whether it did; on a miss it returns the request
// part of the key to store the answer under. Hits and misses are counted
// with the time the lookup took. A model without a cache always misses,
// uncounted.
func (h *handler) lookup(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest, inputs []tensor.Tensor) (modelcache.Request, bool) {
	return h.lookupBy(ctx, m, req, func(c *modelcache.Cache) modelcache.Request { return c.Key(req, inputs) })
}

// lookupImages is lookup for an image model's request, before its images
// are decoded: a hit decodes nothing.
func (h *handler) lookupImages(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest, images [][]byte) (modelcache.Request, bool) {
	return h.lookupBy(ctx, m, req, func(c *modelcache.Cache) modelcache.Request { return c.ImageKey(req, images) })
}

// lookupBy is lookup with the request part that keyOf computes, under
// the model identity of the last answer; its time counts as the
// lookup's.
func (h *handler) lookupBy(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest, keyOf func(*modelcache.Cache) modelcache.Request) (modelcache.Request, bool) {
	c := m.cache
	if c == nil {
		return modelcache.Request{}, false
	}
	start := time.Now()
	r := keyOf(c)
	k := r.At(c.CurrentModel())
	var deadline time.Time // the client's, when the master passed one
	if d, ok := schedule.ClientBudget(&ctx.Request.Header); ok {
		deadline = start.Add(d)
	}
	if outs, ok := c.Get(k, start, deadline); ok {
		c.Segment().Hit(time.Since(start)) // the lookup's time, not the response's
		h.renderGated(ctx, m, req, outs)
		return r, true
	}
	c.Segment().Miss(time.Since(start))
	return r, false
}
