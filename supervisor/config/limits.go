package config

import (
	"os"
	"time"

	"gopkg.in/yaml.v3"
)

// LimitsConfig bounds what one client, or a flood of them, can make the
// public listener do: oversize or slow requests are cut off, and overload
// is shed with 503 + Retry-After instead of queueing without bound.
type LimitsConfig struct {
	// MaxHeaderBytes bounds a request's header block; larger gets 431.
	MaxHeaderBytes ByteSize `yaml:"max_header_bytes"`
	// ReadTimeout bounds the wait for a request's header (from its
	// connection's first byte, or from the start of a keep-alive request),
	// so a client trickling its header (slowloris) cannot hold a
	// connection. The body has its own bound: BodyTimeout, BodyMinRate.
	ReadTimeout Duration `yaml:"read_timeout"`
	// BodyTimeout is how long after its header a request body may take
	// before BodyMinRate extends it: one second more per BodyMinRate bytes
	// received (Apache's mod_reqtimeout body=...,MinRate=...). A body that
	// falls behind is cut with 408 and gives its budget back.
	BodyTimeout Duration `yaml:"body_timeout"`
	// BodyMinRate is the slowest a body may arrive, in bytes per second,
	// once BodyTimeout has passed; 0 = the whole body within BodyTimeout.
	BodyMinRate ByteSize `yaml:"body_min_rate"`
	// MaxBodyBytesInFlight bounds the request body bytes the master holds
	// at once, reserved from each request's declared Content-Length
	// before any of it is read; beyond it a request gets 503 with
	// Retry-After at once. 0 = auto: an eighth of the host's memory (see
	// autoBodyBudget), set by Resolve.
	MaxBodyBytesInFlight ByteSize `yaml:"max_body_bytes_in_flight"`
	// WriteTimeout bounds writing one response, so a client that never
	// reads cannot hold one either.
	WriteTimeout Duration `yaml:"write_timeout"`
	// IdleTimeout closes keep-alive connections idle this long.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxConnections caps open client connections; beyond it new ones are
	// answered 503 with Retry-After and a V2 error, and closed, by the
	// listener itself (supervisor/front conncap.go).
	MaxConnections int `yaml:"max_connections"`
	// MaxInFlight caps requests being served at once across the listener;
	// beyond it a request gets 503 with Retry-After at once. 0 = no cap.
	MaxInFlight int `yaml:"max_in_flight"`
	// PoisonThreshold is how many strikes a request may take within
	// PoisonTTL before requests with the same route and tensors (however
	// encoded) are refused 422 for PoisonTTL, without reaching a worker
	// (supervisor/front poison.go). A strike is the prep or infer worker
	// serving it crashing (a fault in ONNX Runtime or a decoder), or its
	// run outliving max_run_time; a kill from outside, such as the OOM
	// killer's or the hang detection's, does not count.
	// 0 = never refuse.
	PoisonThreshold int `yaml:"poison_threshold"`
	// PoisonTTL is both the window the crashes are counted in and how long
	// a quarantined body is refused after its last crash.
	PoisonTTL Duration `yaml:"poison_ttl"`
	// PoisonKeyRate bounds the request bytes per second the master
	// decodes to key requests whose client hung up (supervisor/front
	// poison.go); past it an abandoned request is keyed by its bytes as
	// sent (supervisor_poison_fallback_keys_total). 0 = never decode
	// them: always key by the bytes as sent.
	PoisonKeyRate ByteSize `yaml:"poison_key_rate"`
	// SharedMemoryRegions bounds the system shared memory regions one
	// API key (or every client, with auth off) holds registered at once
	// (supervisor/sysshm); 0 = no bound.
	SharedMemoryRegions int `yaml:"shared_memory_regions"`
	// SharedMemoryBytes bounds the bytes of those regions the master
	// maps at once for one key; 0 = no bound.
	SharedMemoryBytes ByteSize `yaml:"shared_memory_bytes"`
}

// AuthConfig is optional API-key authentication on the public listener.
// With no keys (neither listed nor in a file) every request is allowed.
type AuthConfig struct {
	// APIKeys are accepted keys, sent as "Authorization: Bearer <key>" or
	// "X-API-Key: <key>". Prefer APIKeysFile, which keeps keys out of the
	// config.
	APIKeys []string `yaml:"api_keys,flow"`
	// APIKeysFile holds one key per line (# comments and blank lines are
	// skipped); it is re-read on reload.
	APIKeysFile string `yaml:"api_keys_file"`
	// ExemptHealth lets /v2/health/* through without a key, for probes.
	ExemptHealth bool `yaml:"exempt_health"`
	// RateLimit is each key's sustained requests per second, 0 = none;
	// RateBurst is how many it may send at once above that (at least 1).
	RateLimit int `yaml:"rate_limit"`
	RateBurst int `yaml:"rate_burst"`
	// RateLimitRedis, "redis://host:port/db", keeps the rate limit's
	// buckets in a Redis that a fleet of supervisors shares, so a key
	// gets rate_limit across the fleet, not on each host; "" = each host
	// its own. When Redis fails or is slow (20ms), each host falls back
	// to its own buckets (supervisor/front ratelimit.go).
	RateLimitRedis string `yaml:"rate_limit_redis"`
}

func defaultLimits() LimitsConfig {
	return LimitsConfig{
		MaxHeaderBytes:  16 << 10,
		ReadTimeout:     Duration{60 * time.Second},
		BodyTimeout:     Duration{10 * time.Second},
		BodyMinRate:     64 << 10,
		WriteTimeout:    Duration{60 * time.Second},
		IdleTimeout:     Duration{120 * time.Second},
		MaxConnections:  10000,
		MaxInFlight:     4096,
		PoisonThreshold: 2,
		PoisonTTL:       Duration{10 * time.Minute},
		PoisonKeyRate:   64 << 20,

		SharedMemoryRegions: 64,
		SharedMemoryBytes:   4 << 30,
	}
}

func defaultAuth() AuthConfig { return AuthConfig{ExemptHealth: true, RateBurst: 1} }

func (d *configDecoder) limits(l *LimitsConfig) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		d.mapping(n, field, d.fieldKeys(l))
	}
}

func (d *configDecoder) auth(a *AuthConfig) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		d.mapping(n, field, d.fieldKeys(a))
	}
}

// strs decodes a list of strings; the empty list leaves nil.
func (d *configDecoder) strs(dst *[]string) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, field, "want a list of strings such as [a, b], got %s", yamlKindName(n))
			return
		}
		var vs []string
		for _, item := range n.Content {
			item = yamlDeref(item)
			if item.Kind != yaml.ScalarNode {
				d.errorf(item, field, "want a string, got %s", yamlKindName(item))
				continue
			}
			vs = append(vs, item.Value)
		}
		*dst = vs
	}
}

func (v *configValidator) limits(l LimitsConfig) {
	if l.MaxHeaderBytes < 1<<10 || l.MaxHeaderBytes > 1<<20 {
		v.errorf("limits.max_header_bytes", "%s is out of range (use 1KiB to 1MiB)", l.MaxHeaderBytes)
	}
	for field, d := range map[string]Duration{"read_timeout": l.ReadTimeout, "write_timeout": l.WriteTimeout, "idle_timeout": l.IdleTimeout, "body_timeout": l.BodyTimeout} {
		if d.Duration < 100*time.Millisecond {
			v.errorf("limits."+field, "%s is too short (at least 100ms)", d)
		}
	}
	if l.MaxConnections < 1 {
		v.errorf("limits.max_connections", "%d must be at least 1", l.MaxConnections)
	}
	if l.MaxInFlight < 0 {
		v.errorf("limits.max_in_flight", "%d is negative (use 0 for no cap)", l.MaxInFlight)
	}
	if l.PoisonThreshold < 0 {
		v.errorf("limits.poison_threshold", "%d is negative (use 0 to never refuse a request that crashed its worker)", l.PoisonThreshold)
	}
	if l.PoisonThreshold > 0 && l.PoisonTTL.Duration < time.Second {
		v.errorf("limits.poison_ttl", "%s is too short (at least 1s)", l.PoisonTTL)
	}
	if l.PoisonKeyRate < 0 {
		v.errorf("limits.poison_key_rate", "%s is negative (bytes per second, such as 64MiB; 0 = key abandoned requests by their bytes as sent)", l.PoisonKeyRate)
	}
	if l.SharedMemoryRegions < 0 {
		v.errorf("limits.shared_memory_regions", "%d is negative (use 0 for no bound)", l.SharedMemoryRegions)
	}
	if l.SharedMemoryBytes < 0 {
		v.errorf("limits.shared_memory_bytes", "%s is negative (such as 4GiB; 0 = no bound)", l.SharedMemoryBytes)
	}
}

func (v *configValidator) auth(a AuthConfig) {
	for i, k := range a.APIKeys {
		if len(k) < MinAPIKeyLen {
			v.errorf("auth.api_keys", "key %d is %d characters; use at least %d (e.g. `openssl rand -hex 16`)", i+1, len(k), MinAPIKeyLen)
		}
	}
	if a.APIKeysFile != "" {
		if _, err := os.Stat(a.APIKeysFile); err != nil {
			v.errorf("auth.api_keys_file", "%v", err)
		}
	}
	if a.RateLimit < 0 {
		v.errorf("auth.rate_limit", "%d is negative (use 0 for no limit)", a.RateLimit)
	}
	if a.RateBurst < 1 {
		v.errorf("auth.rate_burst", "%d must be at least 1", a.RateBurst)
	}
	if a.RateLimitRedis != "" {
		v.redisURL("auth.rate_limit_redis", a.RateLimitRedis)
		if a.RateLimit == 0 {
			v.errorf("auth.rate_limit_redis", "is set but auth.rate_limit is 0 (no limit): set a rate_limit, or remove rate_limit_redis")
		}
	}
}

// MinAPIKeyLen is the shortest API key accepted, in auth.api_keys or in
// auth.api_keys_file (which the master reads): shorter keys are guessable.
const MinAPIKeyLen = 16
