package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigResponseCache(t *testing.T) {
	c := mustParseConfig(t, "models:\n  - name: a\n    path: a.onnx\n    response_cache: {enable: true}\n"+
		"  - name: b\n    path: b.onnx\n    response_cache: {enable: true, max_bytes: 1MiB, ttl: 5s, redis: \"redis://127.0.0.1:6379/0\"}\n  - {name: c, path: c.onnx}\n", "t.yaml")
	a, b := c.Models[0].ResponseCache, c.Models[1].ResponseCache
	if !c.Models[0].CacheEnabled() || a.MaxBytes != defaultCacheBytes || a.TTL.Duration != defaultCacheTTL {
		t.Errorf("defaults: %+v", a)
	}
	if b.MaxBytes != 1<<20 || b.TTL.Duration != 5*time.Second || b.Redis != "redis://127.0.0.1:6379/0" {
		t.Errorf("b: %+v, want 1MiB and 5s", b)
	}
	if c.Models[2].CacheEnabled() {
		t.Error("a model without response_cache has it enabled")
	}
}

func TestConfigResponseCacheErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"max_bytes: 1KiB", "t.yaml:5: models[0].response_cache.max_bytes: 1KiB is out of range"},
		{"ttl: -1s", "t.yaml:5: models[0].response_cache.ttl: -1s is negative"},
		{"redis: http://x", `t.yaml:5: models[0].response_cache.redis: "http://x" is not a redis:// URL`},
		{"redis: \"redis://\"", `t.yaml:5: models[0].response_cache.redis: "redis://" is not a redis:// URL`},
		{"enabled: true", `t.yaml:5: unknown key "enabled" in models[0].response_cache`},
	} {
		_, err := ParseConfig([]byte("models:\n  - name: a\n    path: a.onnx\n    response_cache:\n      "+tc.yaml+"\n"), "t.yaml")
		if !errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
