package config

import (
	"net/url"
	"time"

	"gopkg.in/yaml.v3"
)

// ResponseCacheConfig is a model's response_cache section: answers of
// identical requests served from a cache instead of the infer workers
// (internal/respcache).
type ResponseCacheConfig struct {
	// Enable turns the cache on.
	Enable bool `yaml:"enable"`
	// MaxBytes is the local cache's size, shared by the host's prep
	// workers; entries over MaxBytes/16 are not cached.
	MaxBytes ByteSize `yaml:"max_bytes"`
	// TTL is how long an answer is served from the cache; 0 means until
	// it is evicted.
	TTL Duration `yaml:"ttl"`
	// Redis, "redis://host:port/db", is a second-level cache shared by a
	// fleet, looked up after a local miss; "" means none.
	Redis string `yaml:"redis"`
}

// The response cache's defaults and bounds.
const (
	defaultCacheBytes = 64 << 20
	minCacheBytes     = 64 << 10
	maxCacheBytes     = 64 << 30
	defaultCacheTTL   = time.Minute
)

// responseCache decodes a model's response_cache section over the
// defaults; its keys are ResponseCacheConfig's yaml tags (fieldKeys).
func (d *configDecoder) responseCache(dst **ResponseCacheConfig) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		c := ResponseCacheConfig{MaxBytes: defaultCacheBytes, TTL: Duration{defaultCacheTTL}}
		*dst = &c
		d.mapping(n, field, d.fieldKeys(&c))
	}
}

// responseCache validates a model's response_cache section.
func (v *configValidator) responseCache(field string, c *ResponseCacheConfig) {
	if c == nil {
		return
	}
	if c.MaxBytes < minCacheBytes || c.MaxBytes > maxCacheBytes {
		v.errorf(field+".max_bytes", "%s is out of range (use %s to %s)", c.MaxBytes, ByteSize(minCacheBytes), ByteSize(maxCacheBytes))
	}
	if c.TTL.Duration < 0 {
		v.errorf(field+".ttl", "%s is negative (use 0 to keep answers until evicted, or a duration such as 60s)", c.TTL)
	}
	if c.Redis != "" {
		v.redisURL(field+".redis", c.Redis)
	}
}

// redisURL checks a Redis address: response_cache.redis, or
// auth.rate_limit_redis.
func (v *configValidator) redisURL(field, s string) {
	if u, err := url.Parse(s); err != nil || u.Scheme != "redis" || u.Host == "" {
		v.errorf(field, "%q is not a redis:// URL (use redis://host:port/db)", s)
	}
}

// CacheEnabled reports whether the model's responses are cached.
func (m *ModelConfig) CacheEnabled() bool { return m.ResponseCache != nil && m.ResponseCache.Enable }
