package cachesegs

import (
	"os"
	"sync"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/respcache"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// Set is the master's response cache segments, one per model with
// response_cache enabled (internal/respcache). The master creates them, the
// prep workers map them; a reload keeps a model's segment unless its
// max_bytes changed (the key carries the model's settings and content
// identity, so answers of a replaced model never match; a new size is a
// new path, so the prep workers are replaced onto it) and removes those
// of models that no longer cache.
type Set struct {
	mu    sync.Mutex
	segs  map[string]*respcache.Segment
	chown func(path string) error // nil: the workers run as the master
	Log   zerolog.Logger
}

// Sync makes the segments match cfg and returns their paths by model. A
// segment that cannot be made is logged and left out: the model serves
// uncached.
func (c *Set) Sync(cfg *config.Config) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.segs == nil {
		c.segs = map[string]*respcache.Segment{}
		respcache.RemoveStale()
	}
	want := map[string]int64{}
	for _, mc := range cfg.Models {
		if mc.CacheEnabled() {
			want[mc.Name] = int64(mc.ResponseCache.MaxBytes)
		}
	}
	for name, s := range c.segs {
		if size, ok := want[name]; !ok || size != s.MaxBytes() {
			s.Remove()
			delete(c.segs, name)
		}
	}
	paths := map[string]string{}
	for name, size := range want {
		if s := c.open(name, size); s != nil {
			paths[name] = s.Path()
		}
	}
	return paths
}

// open returns the model's segment, created if missing. The caller holds mu.
func (c *Set) open(name string, size int64) *respcache.Segment {
	if s := c.segs[name]; s != nil {
		return s
	}
	s, err := respcache.Create(respcache.PathFor(os.Getpid(), name, size), size)
	if err == nil && c.chown != nil {
		err = c.chown(s.Path())
	}
	if err != nil {
		c.Log.Warn().Err(err).Str("model", name).Msg("no response cache: the model serves uncached")
		s.Remove()
		return nil
	}
	c.segs[name] = s
	c.Log.Info().Str("model", name).Str("path", s.Path()).Int64("max_bytes", size).Msg("response cache created")
	return s
}

// SetOwner gives the segments, now and later, to the workers' user.
func (c *Set) SetOwner(chown func(path string) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chown = chown
	for _, s := range c.segs {
		if err := chown(s.Path()); err != nil {
			return err
		}
	}
	return nil
}

// Stats reads every segment's counters by model.
func (c *Set) Stats() map[string]respcache.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]respcache.Stats, len(c.segs))
	for name, s := range c.segs {
		out[name] = s.Stats()
	}
	return out
}

// Remove removes every segment (the master is stopping).
func (c *Set) Remove() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, s := range c.segs {
		s.Remove()
		delete(c.segs, name)
	}
}
