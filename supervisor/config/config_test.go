package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/supervisor-dev/supervisor/configs"
	"github.com/supervisor-dev/supervisor/internal/imageprep"
)

// plainConfig drops where values came from, so parsed Configs compare with
// DefaultConfig and with each other.
func plainConfig(c *Config) Config {
	p := *c
	p.origin = configOrigin{}
	return p
}

func mustParseConfig(t *testing.T, data, source string) *Config {
	t.Helper()
	c, err := ParseConfig([]byte(data), source)
	if err != nil {
		t.Fatalf("ParseConfig(%s): %v", source, err)
	}
	return c
}

func TestConfigEmptyFileIsDefault(t *testing.T) {
	for _, data := range []string{"", "\n", "# only a comment\n", "~\n", "---\n", "---\n# c\n...\n"} {
		have := plainConfig(mustParseConfig(t, data, "empty.yaml"))
		if want := plainConfig(DefaultConfig()); !reflect.DeepEqual(have, want) {
			t.Errorf("ParseConfig(%q) = %+v, want DefaultConfig() %+v", data, have, want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	want := Config{
		Listen:          "127.0.0.1:8000",
		LogLevel:        "info",
		MaxBodyBytes:    64 << 20,
		ShutdownTimeout: Duration{30 * time.Second},
		BootTimeout:     Duration{120 * time.Second},
		ModelControl:    ModelControlNone,
		Models:          []ModelConfig{{Name: "default", Path: "models/default.onnx", Batching: DefaultBatching()}},
		Prep: PrepConfig{Workers: 0, UpstreamTimeout: Duration{60 * time.Second}, CPUs: "auto",
			Handoff: "shm", ArenaSlots: 64, ArenaSlotBytes: 16 << 20, MinWorkers: 1,
			Autoscale: AutoscaleConfig{Interval: Duration{time.Second}, UpAfter: Duration{5 * time.Second},
				DownAfter: Duration{30 * time.Second}, Cooldown: Duration{10 * time.Second}, UpBusy: 0.9, DownBusy: 0.4, MinIdleCPUs: 0.5}},
		Infer: InferConfig{Workers: 1, IntraOpThreads: 0, CPUs: "auto",
			Providers:     ProvidersConfig{CUDA: CUDAConfig{DoCopyInDefaultStream: true}, TensorRT: TensorRTConfig{EngineCacheDir: "trt-engines"}},
			OutputBinding: "off"},
		Workers: WorkersConfig{
			DrainTimeout:      Duration{30 * time.Second},
			HeartbeatTimeout:  Duration{10 * time.Second},
			RestartBackoff:    Duration{100 * time.Millisecond},
			RestartBackoffMax: Duration{30 * time.Second},
			DegradedAfter:     5,
			MaxSurge:          1,
		},
		Limits: LimitsConfig{MaxHeaderBytes: 16 << 10, ReadTimeout: Duration{time.Minute}, WriteTimeout: Duration{time.Minute},
			IdleTimeout: Duration{2 * time.Minute}, MaxConnections: 10000, MaxInFlight: 4096,
			PoisonThreshold: 2, PoisonTTL: Duration{10 * time.Minute}, PoisonKeyRate: 64 << 20,
			SharedMemoryRegions: 64, SharedMemoryBytes: 4 << 30,
			BodyTimeout: Duration{10 * time.Second}, BodyMinRate: 64 << 10},
		Auth:    AuthConfig{ExemptHealth: true, RateBurst: 1},
		Metrics: MetricsConfig{Listen: "127.0.0.1:8002"},
		GRPC: GRPCConfig{Listen: "127.0.0.1:8001", MaxConcurrentStreams: 128, MaxConnections: 1000, MaxRPCs: 4096,
			AbusePenalty: Duration{time.Second}},
		RequestLog: RequestLogConfig{SlowThreshold: Duration{time.Second}},
		Placement:  PlacementConfig{MasterCPUs: "auto", NUMAMemory: "none"},
		Tracing:    defaultTracing(),
	}
	if have := *DefaultConfig(); !reflect.DeepEqual(have, want) {
		t.Errorf("DefaultConfig() = %+v, want %+v", have, want)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate(): %v", err)
	}
}

func TestConfigEmbeddedDefault(t *testing.T) {
	c := mustParseConfig(t, string(configs.Default), "<embedded default>")
	if have, want := plainConfig(c), plainConfig(DefaultConfig()); !reflect.DeepEqual(have, want) {
		t.Errorf("configs/default.yaml = %+v, want DefaultConfig() %+v", have, want)
	}
	// "Every key shown": the file names every key YAML() writes.
	assertSameKeys(t, "configs/default.yaml", configs.Default)
}

func TestConfigGPUHost(t *testing.T) {
	c, err := LoadConfig("../../configs/gpu-host.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "0.0.0.0:8000" || len(c.Models) != 2 || c.Models[1].Name != "bert-base" ||
		c.MaxBodyBytes != 256<<20 || c.BootTimeout.Duration != 5*time.Minute {
		t.Errorf("gpu-host.yaml parsed as %+v", plainConfig(c))
	}
	data, err := os.ReadFile("../../configs/gpu-host.yaml")
	if err != nil {
		t.Fatal(err)
	}
	assertSameKeys(t, "configs/gpu-host.yaml", data)
}

// assertSameKeys checks that data sets exactly the keys the effective
// config has, so example files stay complete as keys are added.
func assertSameKeys(t *testing.T, name string, data []byte) {
	t.Helper()
	effective, err := DefaultConfig().YAML()
	if err != nil {
		t.Fatal(err)
	}
	if have, want := configKeyPaths(t, data), configKeyPaths(t, effective); !reflect.DeepEqual(have, want) {
		t.Errorf("%s has keys %v, want %v", name, have, want)
	}
}

func configKeyPaths(t *testing.T, data []byte) []string {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				walk(childFieldPath(prefix, k), child)
			}
		case []any:
			for _, child := range v {
				walk(prefix+"[]", child)
			}
		default:
			paths = append(paths, prefix)
		}
	}
	walk("", doc)
	sort.Strings(paths)
	return slices.Compact(paths)
}

func TestConfigValues(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want func(c *Config) // edits DefaultConfig into the expected result
	}{
		{"listen on every interface", "listen: ':9000'\n",
			func(c *Config) { c.Listen = ":9000" }},
		{"ipv6 listen", "listen: '[::1]:8000'\n",
			func(c *Config) { c.Listen = "[::1]:8000" }},
		{"size as integer", "max_body_bytes: 1048576\n",
			func(c *Config) { c.MaxBodyBytes = 1 << 20 }},
		{"size in decimal units", "max_body_bytes: 2 MB\n",
			func(c *Config) { c.MaxBodyBytes = 2e6 }},
		{"size in GiB", "max_body_bytes: 1GiB\n",
			func(c *Config) { c.MaxBodyBytes = 1 << 30 }},
		{"zero shutdown timeout", "shutdown_timeout: 0s\n",
			func(c *Config) { c.ShutdownTimeout = Duration{} }},
		{"drain grace", "drain_grace: 10s\n",
			func(c *Config) { c.DrainGrace = Duration{10 * time.Second} }},
		{"composite duration", "boot_timeout: 1m30s\n",
			func(c *Config) { c.BootTimeout = Duration{90 * time.Second} }},
		{"key without value keeps default", "listen:\nprep:\n  workers: ~\n",
			func(c *Config) {}},
		{"models replace the default", "models:\n  - {name: a, path: /m/a.onnx}\n  - name: b.v2\n    path: b.onnx\n",
			func(c *Config) {
				c.Models = []ModelConfig{{Name: "a", Path: "/m/a.onnx"}, {Name: "b.v2", Path: "b.onnx"}}
			}},
		{"anchors and aliases", "prep:\n  upstream_timeout: &t 5s\nboot_timeout: *t\n",
			func(c *Config) {
				c.Prep.UpstreamTimeout = Duration{5 * time.Second}
				c.BootTimeout = Duration{5 * time.Second}
			}},
		{"explicit auto values", "runtime_dir: /run/s\nprep:\n  workers: 3\ninfer:\n  workers: 2\n  intra_op_threads: 4\n",
			func(c *Config) {
				c.RuntimeDir = "/run/s"
				c.Prep.Workers = 3
				c.Infer = InferConfig{Workers: 2, IntraOpThreads: 4, CPUs: "auto", Providers: DefaultProviders(), OutputBinding: "off"}
			}},
		{"poison key rate as a size", "limits:\n  poison_key_rate: 8MiB\n",
			func(c *Config) { c.Limits.PoisonKeyRate = 8 << 20 }},
		{"poison key rate 0: never decode abandoned requests", "limits:\n  poison_key_rate: 0\n",
			func(c *Config) { c.Limits.PoisonKeyRate = 0 }},
		{"runtime_dir of exactly 80 bytes", "runtime_dir: /" + strings.Repeat("r", 79) + "\n",
			func(c *Config) { c.RuntimeDir = "/" + strings.Repeat("r", 79) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := DefaultConfig()
			tt.want(want)
			if have := mustParseConfig(t, tt.yaml, "t.yaml"); !reflect.DeepEqual(plainConfig(have), plainConfig(want)) {
				t.Errorf("have %+v\nwant %+v", plainConfig(have), plainConfig(want))
			}
		})
	}
}

// configErrorLines splits a joined error into its messages.
func configErrorLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// checkConfigErrors checks err's messages, one per line, against want:
// as many, in order, each starting with its want.
func checkConfigErrors(t *testing.T, err error, want []string) {
	t.Helper()
	have := configErrorLines(err)
	if len(have) != len(want) {
		t.Fatalf("have %d errors:\n%v\nwant %d:\n%s", len(have), err, len(want), strings.Join(want, "\n"))
	}
	for i := range have {
		if !strings.HasPrefix(have[i], want[i]) {
			t.Errorf("error %d:\nhave %s\nwant %s...", i, have[i], want[i])
		}
	}
}

func TestConfigErrors(t *testing.T) {
	long := "/" + strings.Repeat("d", 80)
	tests := []struct {
		name string
		yaml string
		want []string // each a prefix of one message, in order
	}{
		{"unknown key", "listen: :8000\nprep:\n  workers: 2\n  workerz: 3\n",
			[]string{`t.yaml:4: unknown key "workerz" in prep (known keys: workers, min_workers, max_workers, autoscale, upstream_timeout, handoff, arena_slots, arena_slot_bytes, max_decode_bytes, max_requests, max_requests_jitter, max_rss_bytes, max_lifetime, cpus, cpus_per_worker)`}},
		{"unknown top-level key", "\n\nlisten_addr: :80\n",
			[]string{`t.yaml:3: unknown key "listen_addr" (known keys: listen, runtime_dir,`}},
		{"unknown key in a model", "models:\n  - name: a\n    paht: a.onnx\n",
			[]string{`t.yaml:2: models[0].path: is empty`, `t.yaml:3: unknown key "paht" in models[0] (known keys: name, path, versions, version_policy, batching, preprocess, postprocess, providers, output_binding, warmup, response_cache, max_run_time)`}},
		{"unknown control group", "control_group: no-such-group-xyz\n",
			[]string{`t.yaml:1: control_group: group "no-such-group-xyz" does not exist`}},
		{"control group is the workers' group", "workers:\n  user: root\n  group: root\ncontrol_group: \"0\"\n",
			[]string{`t.yaml:4: control_group: "0" (gid 0) is workers.group (root): the workers could reload, stop or upgrade the master`}},
		{"control group is the workers' user's group", "workers:\n  user: root\ncontrol_group: root\n",
			[]string{`t.yaml:3: control_group: "root" (gid 0) is the primary group of workers.user (root): the workers could`}},
		{"rate_limit_redis not a redis URL", "auth:\n  rate_limit: 5\n  rate_limit_redis: http://r:6379\n",
			[]string{`t.yaml:3: auth.rate_limit_redis: "http://r:6379" is not a redis:// URL (use redis://host:port/db)`}},
		{"rate_limit_redis without a rate", "auth:\n  rate_limit_redis: redis://r:6379/0\n",
			[]string{`t.yaml:2: auth.rate_limit_redis: is set but auth.rate_limit is 0 (no limit)`}},
		{"unknown workers group", "workers:\n  user: root\n  group: no-such-group-xyz\n",
			[]string{`t.yaml:3: workers.group: group "no-such-group-xyz" does not exist`}},
		{"unknown workers user", "workers:\n  user: no-such-user-xyz\n  group: root\n",
			[]string{`t.yaml:2: workers.user: user "no-such-user-xyz" does not exist`}},
		{"group without a user", "workers:\n  group: root\n",
			[]string{`t.yaml:2: workers.group: a group needs a user`}},
		{"key set twice", "listen: :1\nlisten: :2\n",
			[]string{`t.yaml:2: listen: set twice, first at line 1 (keep one)`}},
		{"negative workers", "prep:\n  workers: -1\n",
			[]string{`t.yaml:2: prep.workers: -1 is out of range (use 0 for auto, or 1 to 256)`}},
		{"too many prep workers", "prep:\n  workers: 257\n",
			[]string{`t.yaml:2: prep.workers: 257 is out of range`}},
		{"zero infer workers", "infer:\n  workers: 0\n",
			[]string{`t.yaml:2: infer.workers: 0 is out of range (use 1 to 64)`}},
		{"max_run_time too short", "infer:\n  max_run_time: 1ms\n",
			[]string{`t.yaml:2: infer.max_run_time: 1ms is too short (at least 10ms`}},
		{"model max_run_time past the upstream timeout", "prep:\n  upstream_timeout: 5s\nmodels:\n  - name: m\n    path: m.onnx\n    max_run_time: 5s\n",
			[]string{`t.yaml:6: models[0].max_run_time: 5s is not below prep.upstream_timeout (5s)`}},
		{"max_run_time not a duration", "infer:\n  max_run_time: soon\n",
			[]string{`t.yaml:2: infer.max_run_time: "soon" is not a duration`}},
		{"negative intra-op threads", "infer:\n  intra_op_threads: -2\n",
			[]string{`t.yaml:2: infer.intra_op_threads: -2 is out of range`}},
		{"workers not a number", "prep:\n  workers: two\n",
			[]string{`t.yaml:2: prep.workers: "two" is not a whole number`}},
		{"workers a float", "infer:\n  workers: 1.5\n",
			[]string{`t.yaml:2: infer.workers: "1.5" is not a whole number`}},
		{"prep not a mapping", "prep: 4\n",
			[]string{`t.yaml:1: prep: want a mapping with the keys workers, min_workers, max_workers, autoscale, upstream_timeout, handoff, arena_slots, arena_slot_bytes, max_decode_bytes, max_requests, max_requests_jitter, max_rss_bytes, max_lifetime, cpus, cpus_per_worker, got "4"`}},
		{"root not a mapping", "- listen\n",
			[]string{`t.yaml:1: the config must be a mapping`}},
		{"string given a list", "log_level:\n  - info\n",
			[]string{`t.yaml:2: log_level: want a string, got a list`}},
		{"bad duration", "\nshutdown_timeout: 30 seconds\n",
			[]string{`t.yaml:2: shutdown_timeout: "30 seconds" is not a duration (use Go syntax such as 30s, 1m30s or 500ms)`}},
		{"duration without unit", "boot_timeout: 30\n",
			[]string{`t.yaml:1: boot_timeout: "30" is not a duration`}},
		{"negative shutdown timeout", "shutdown_timeout: -1s\n",
			[]string{`t.yaml:1: shutdown_timeout: -1s is negative`}},
		{"negative drain grace", "listen: 127.0.0.1:8000\ndrain_grace: -5s\n",
			[]string{`t.yaml:2: drain_grace: -5s is negative`}},
		{"negative poison threshold", "limits:\n  poison_threshold: -1\n",
			[]string{`t.yaml:2: limits.poison_threshold: -1 is negative (use 0 to never refuse`}},
		{"short poison ttl", "limits:\n  poison_ttl: 10ms\n",
			[]string{`t.yaml:2: limits.poison_ttl: 10ms is too short (at least 1s)`}},
		{"negative poison key rate", "limits:\n  poison_key_rate: -1\n",
			[]string{`t.yaml:2: limits.poison_key_rate: -1 is negative (bytes per second`}},
		{"negative shared memory regions", "limits:\n  shared_memory_regions: -1\n",
			[]string{`t.yaml:2: limits.shared_memory_regions: -1 is negative`}},
		{"negative shared memory bytes", "limits:\n  shared_memory_bytes: -1\n",
			[]string{`t.yaml:2: limits.shared_memory_bytes: -1 is negative`}},
		{"poison key rate not a size", "limits:\n  poison_key_rate: fast\n",
			[]string{`t.yaml:2: limits.poison_key_rate: "fast" is not a size`}},
		{"zero boot timeout", "boot_timeout: 0s\n",
			[]string{`t.yaml:1: boot_timeout: 0s must be greater than 0`}},
		{"zero upstream timeout", "prep:\n  upstream_timeout: 0s\n",
			[]string{`t.yaml:2: prep.upstream_timeout: 0s must be greater than 0`}},
		{"bad size unit", "max_body_bytes: 12XB\n",
			[]string{`t.yaml:1: max_body_bytes: "12XB" is not a size: unknown unit "XB" (use a whole number of bytes`}},
		{"size without number", "max_body_bytes: MiB\n",
			[]string{`t.yaml:1: max_body_bytes: "MiB" is not a size`}},
		{"size overflow", "max_body_bytes: 9999999999TiB\n",
			[]string{`t.yaml:1: max_body_bytes: "9999999999TiB" is too large`}},
		{"zero size", "max_body_bytes: 0\n",
			[]string{`t.yaml:1: max_body_bytes: 0 must be greater than 0`}},
		{"bad log level", "log_level: loud\n",
			[]string{`t.yaml:1: log_level: "loud" is not a log level (use debug, info, warn or error)`}},
		{"empty listen", "listen: ''\n",
			[]string{`t.yaml:1: listen: is empty (want host:port`}},
		{"listen without port", "listen: 127.0.0.1\n",
			[]string{`t.yaml:1: listen: "127.0.0.1" has no port (want host:port`}},
		{"listen with empty port", "listen: 'localhost:'\n",
			[]string{`t.yaml:1: listen: "localhost:" has no port`}},
		{"bracketed host without a port", "listen: \"[::1]\"\n",
			[]string{`t.yaml:1: listen: "[::1]" has no port`}},
		{"IPv6 host without brackets", "listen: \"::1\"\n",
			[]string{`t.yaml:1: listen: "::1" is not host:port: too many colons`}},
		{"listen with named port", "listen: localhost:http\n",
			[]string{`t.yaml:1: listen: port "http" in "localhost:http" is not a number from 0 to 65535`}},
		{"listen with big port", "listen: ':70000'\n",
			[]string{`t.yaml:1: listen: port "70000"`}},
		{"empty model name", "models:\n  - name: ''\n    path: a.onnx\n",
			[]string{`t.yaml:2: models[0].name: is empty`}},
		{"missing model name", "models:\n  - path: a.onnx\n",
			[]string{`t.yaml:2: models[0].name: is empty`}},
		{"bad model name", "models:\n  - path: a.onnx\n    name: a/b\n",
			[]string{`t.yaml:3: models[0].name: "a/b" is not a valid model name`}},
		{"dot model name", "models:\n  - {name: .., path: a.onnx}\n",
			[]string{`t.yaml:2: models[0].name: ".." cannot be a model name`}},
		{"duplicate model name", "models:\n  - name: a\n    path: a.onnx\n  - name: b\n    path: b.onnx\n  - name: a\n    path: c.onnx\n",
			[]string{`t.yaml:6: models[2].name: "a" is already the name of models[0] at line 2 (model names must be unique)`}},
		{"empty model path", "models:\n  - name: a\n    path: ''\n",
			[]string{`t.yaml:3: models[0].path: is empty (give the path of the model's .onnx file)`}},
		{"empty models list", "models: []\n",
			[]string{`t.yaml:1: models: the list is empty`}},
		{"models not a list", "models:\n  name: a\n",
			[]string{`t.yaml:2: models: want a list of models`}},
		{"model not a mapping", "models:\n  - a.onnx\n",
			[]string{`t.yaml:2: models[0]: want a mapping with the keys name, path, versions, version_policy, batching, preprocess, postprocess, providers, output_binding, warmup, response_cache, max_run_time, got "a.onnx"`}},
		{"runtime_dir too long", "runtime_dir: " + long + "\n",
			[]string{`t.yaml:1: runtime_dir: "` + long + `" is 81 bytes; Unix socket paths are limited to 108 bytes, use a shorter directory (at most 80 bytes)`}},
		{"relative runtime_dir", "runtime_dir: run\n",
			[]string{`t.yaml:1: runtime_dir: "run" is a relative path`}},
		{"second document", "listen: :1\n---\nlisten: :2\n",
			[]string{`t.yaml:2: a second YAML document starts here`}},
		{"syntax error", "listen: :1\nprep:\n\tworkers: 1\n",
			[]string{`t.yaml:3: invalid YAML: found character that cannot start any token`}},
		{"unclosed flow", "models: [\n",
			[]string{`t.yaml:1: invalid YAML:`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tt.yaml), "t.yaml")
			if err == nil {
				t.Fatalf("ParseConfig(%q) = %+v, want errors %q", tt.yaml, plainConfig(c), tt.want)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("errors.Is(%v, ErrInvalidConfig) = false", err)
			}
			checkConfigErrors(t, err, tt.want)
		})
	}
}

func TestConfigReportsAllErrors(t *testing.T) {
	data := `listen: 127.0.0.1
log_level: loud
max_body_bytes: 12XB
models:
  - name: a
    path: a.onnx
  - name: a
    path: ""
prep:
  workerz: 2
  workers: -1
infer:
  workers: 0
`
	_, err := ParseConfig([]byte(data), "all.yaml")
	want := []string{
		`all.yaml:1: listen: "127.0.0.1" has no port`,
		`all.yaml:2: log_level: "loud" is not a log level`,
		`all.yaml:3: max_body_bytes: "12XB" is not a size`,
		`all.yaml:7: models[1].name: "a" is already the name of models[0] at line 5`,
		`all.yaml:8: models[1].path: is empty`,
		`all.yaml:10: unknown key "workerz" in prep`,
		`all.yaml:11: prep.workers: -1 is out of range`,
		`all.yaml:13: infer.workers: 0 is out of range`,
	}
	have := configErrorLines(err)
	if len(have) != len(want) {
		t.Fatalf("have %d errors:\n%v\nwant %d", len(have), err, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(have[i], want[i]) {
			t.Errorf("error %d:\nhave %s\nwant %s...", i, have[i], want[i])
		}
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Source != "all.yaml" || ce.Line != 1 || ce.Field != "listen" {
		t.Errorf("errors.As(err, *ConfigError) = %+v, want the listen error at all.yaml:1", ce)
	}
}

func TestConfigValidateWithoutSource(t *testing.T) {
	c := DefaultConfig()
	c.Infer.Workers = 0
	err := c.Validate()
	if have, want := configErrorLines(err), []string{"infer.workers: 0 is out of range (use 1 to 64)"}; !reflect.DeepEqual(have, want) {
		t.Errorf("Validate() = %q, want %q", have, want)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.yaml")
	if err := os.WriteFile(path, []byte("prep:\n  workers: 2\n  bogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(path)
	if want := path + `:3: unknown key "bogus" in prep`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("LoadConfig(%q) = %v, want %s...", path, err, want)
	}
	missing := filepath.Join(dir, "missing.yaml")
	_, err = LoadConfig(missing)
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), missing) {
		t.Errorf("LoadConfig(%q) = %v, want a not-exist error naming the file", missing, err)
	}
}

func TestConfigYAMLRoundTrip(t *testing.T) {
	c := DefaultConfig()
	c.RuntimeDir = "/run/sv"
	c.ONNXRuntimeLibrary = "/opt/ort/libonnxruntime.so.1"
	c.LogLevel = "debug"
	c.MaxBodyBytes = 1500
	c.ShutdownTimeout = Duration{}
	c.BootTimeout = Duration{time.Hour + 90*time.Second}
	c.Models = append(c.Models, ModelConfig{Name: "b", Path: "/m/b.onnx"})
	c.Prep = PrepConfig{Workers: 3, UpstreamTimeout: Duration{1500 * time.Millisecond}, CPUs: "4-7", CPUsPerWorker: 2,
		Handoff: "inline", ArenaSlots: 8, ArenaSlotBytes: 1 << 20}
	c.Infer = InferConfig{Workers: 2, IntraOpThreads: 7, Recycle: Recycle{MaxRequests: 1000, MaxRequestsJitter: 50, MaxRSSBytes: 1 << 30, MaxLifetime: Duration{time.Hour}},
		GPUs: GPUSelection{Explicit: true, Devices: []string{"1", "GPU-8f6e"}}, CPUs: "auto",
		Providers: ProvidersConfig{CUDA: CUDAConfig{GPUMemLimit: 1 << 30, ArenaExtendStrategy: "kSameAsRequested",
			CuDNNConvAlgoSearch: "DEFAULT"},
			TensorRT: TensorRTConfig{Enable: true, FP16: true, EngineCacheDir: "/var/cache/trt", MaxWorkspace: 1 << 30, TimingCache: true}},
		OutputBinding: "pinned"}
	c.Placement = PlacementConfig{MasterCPUs: "0", NUMAMemory: "bind", Overcommit: true}
	c.Workers.HeartbeatTimeout = Duration{3 * time.Second}
	// Every key of the sections whose key tables are their struct tags
	// (fieldKeys), away from its default, so a tag the decoder does not
	// read back fails here.
	c.Models = append(c.Models, ModelConfig{Name: "img", Path: "/m/img.onnx", Batching: DefaultBatching(),
		Preprocess: &PreprocessConfig{Kind: KindImage, Settings: imageprep.Settings{Width: 224, Height: 200, Resize: "shorter-crop",
			Interpolation: "nearest", ChannelOrder: "BGR", Scale: 1.0 / 255, Mean: [3]float32{0.4, 0.5, 0.6}, Std: [3]float32{0.2, 0.25, 0.3},
			Layout: "NHWC", DType: "FP16", MaxPixels: 1 << 20, MaxImages: 8, MaxRequestPixels: 3 << 20}},
		Postprocess: &PostprocessConfig{Output: "probs", Softmax: true, TopK: 5}})
	trt := DefaultProviders()
	trt.TensorRT.Enable, trt.TensorRT.EngineCacheDir, trt.CUDA.DoCopyInDefaultStream = true, "none", false
	c.Models = append(c.Models, ModelConfig{Name: "trt", Path: "/m/trt.onnx", Providers: &trt, OutputBinding: "off"})
	c.Workers.User, c.Workers.Group, c.Workers.DegradedAfter, c.Workers.MaxSurge = "root", "root", 7, 3
	c.Limits.MaxConnections, c.Limits.IdleTimeout = 77, Duration{42 * time.Second}
	c.Auth.RateLimit, c.Auth.RateBurst = 9, 4

	resolved := DefaultConfig()
	resolved.Resolve()
	for _, want := range []*Config{DefaultConfig(), c, resolved} {
		out, err := want.YAML()
		if err != nil {
			t.Fatal(err)
		}
		have, err := ParseConfig(out, "yaml-output")
		if err != nil {
			t.Fatalf("YAML() output does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(plainConfig(have), plainConfig(want)) {
			t.Errorf("round trip through\n%s\nhave %+v\nwant %+v", out, plainConfig(have), plainConfig(want))
		}
	}

	out, _ := DefaultConfig().YAML()
	for _, line := range []string{"max_body_bytes: 64MiB\n", "shutdown_timeout: 30s\n", "boot_timeout: 2m\n",
		"models:\n  - name: default\n    path: models/default.onnx\n", "  upstream_timeout: 1m\n"} {
		if !strings.Contains(string(out), line) {
			t.Errorf("DefaultConfig().YAML() lacks %q:\n%s", line, out)
		}
	}
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		out  string // String()
	}{
		{"1", 1, "1B"},
		{"1500", 1500, "1500B"},
		{"1500B", 1500, "1500B"},
		{"64MiB", 64 << 20, "64MiB"},
		{"64 MiB", 64 << 20, "64MiB"},
		{"1024KiB", 1 << 20, "1MiB"},
		{"3GiB", 3 << 30, "3GiB"},
		{"2TiB", 2 << 40, "2TiB"},
		{"1KB", 1000, "1KB"},
		{"5MB", 5e6, "5MB"},
		{"2GB", 2e9, "2GB"},
		{"1TB", 1e12, "1TB"},
		{"1536KB", 1536000, "1500KiB"},
	}
	for _, tt := range tests {
		have, err := parseByteSize(tt.in)
		if err != nil || have != tt.want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", tt.in, have, err, tt.want)
		}
		if s := have.String(); s != tt.out {
			t.Errorf("ByteSize(%d).String() = %q, want %q", have, s, tt.out)
		}
		if back, err := parseByteSize(have.String()); err != nil || back != have {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", have.String(), back, err, have)
		}
	}
	for _, bad := range []string{"", "MiB", "12XB", "64mib", "64Mb", "1.5GiB", "-1MiB", "64 MiB B", "99999999999999999999"} {
		if v, err := parseByteSize(bad); err == nil {
			t.Errorf("parseByteSize(%q) = %d, want an error", bad, v)
		}
	}
}

func TestByteSizeAndDurationYAML(t *testing.T) {
	var v struct {
		Size ByteSize `yaml:"size"`
		Hex  ByteSize `yaml:"hex"`
		Dur  Duration `yaml:"dur"`
	}
	if err := yaml.Unmarshal([]byte("size: 2KiB\nhex: 0x10\ndur: 1h30m\n"), &v); err != nil {
		t.Fatal(err)
	}
	if v.Size != 2048 || v.Hex != 16 || v.Dur.Duration != 90*time.Minute {
		t.Errorf("Unmarshal = %+v", v)
	}
	out, err := yaml.Marshal(v)
	if have, want := string(out), "size: 2KiB\nhex: 16B\ndur: 1h30m\n"; err != nil || have != want {
		t.Errorf("Marshal = %q, %v; want %q", have, err, want)
	}
	if err := yaml.Unmarshal([]byte("dur: 30 seconds\n"), &v); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("Unmarshal of a bad duration = %v, want an error on line 1", err)
	}
}

func TestDurationString(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                  "0s",
		500 * time.Millisecond:             "500ms",
		30 * time.Second:                   "30s",
		2 * time.Minute:                    "2m",
		10*time.Minute + 5*time.Second:     "10m5s",
		time.Hour:                          "1h",
		time.Hour + 10*time.Minute:         "1h10m",
		time.Hour + 5*time.Second:          "1h0m5s",
		-time.Second:                       "-1s",
		time.Minute + 500*time.Millisecond: "1m0.5s",
	} {
		if have := (Duration{d}).String(); have != want {
			t.Errorf("Duration(%v).String() = %q, want %q", d, have, want)
		}
		if back, err := parseDuration(want); err != nil || back.Duration != d {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", want, back, err, d)
		}
	}
}

func TestConfigResolve(t *testing.T) {
	env := func(cpus, euid int, xdg, tmp string, runWritable bool) resolveEnv {
		return resolveEnv{
			numCPU:      cpus,
			euid:        euid,
			getenv:      func(k string) string { return map[string]string{"XDG_RUNTIME_DIR": xdg}[k] },
			tempDir:     tmp,
			runWritable: func() bool { return runWritable },
		}
	}
	long := "/" + strings.Repeat("x", 75)
	tests := []struct {
		name  string
		yaml  string
		env   resolveEnv
		dir   string
		prep  int
		intra int
	}{
		// prep.workers and intra_op_threads 0 are the placement plan's to
		// decide (placement_test.go), so Resolve leaves them at 0.
		{"root with /run", "", env(8, 0, "", "/tmp", true), "/run/supervisor", 0, 0},
		{"root without writable /run", "", env(8, 0, "/run/user/0", "/tmp", false), "/run/user/0/supervisor", 0, 0},
		{"user with XDG_RUNTIME_DIR", "", env(2, 1000, "/run/user/1000", "/tmp", true), "/run/user/1000/supervisor", 0, 0},
		{"user without XDG_RUNTIME_DIR", "", env(1, 1000, "", "/var/tmp", true), "/var/tmp/supervisor-1000", 0, 0},
		{"relative XDG_RUNTIME_DIR is ignored", "", env(4, 1000, "run", "/tmp", false), "/tmp/supervisor-1000", 0, 0},
		{"too long XDG_RUNTIME_DIR is skipped", "", env(4, 1000, long, "/tmp", false), "/tmp/supervisor-1000", 0, 0},
		{"too long TMPDIR falls back to /tmp", "", env(4, 1000, "", long, false), "/tmp/supervisor-1000", 0, 0},
		{"explicit values stay", "runtime_dir: /srv/s\nprep:\n  workers: 5\ninfer:\n  intra_op_threads: 3\n",
			env(8, 0, "/run/user/0", "/tmp", true), "/srv/s", 5, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParseConfig(t, tt.yaml, "t.yaml")
			raw := plainConfig(c)
			c.resolve(tt.env)
			if c.RuntimeDir != tt.dir || c.Prep.Workers != tt.prep || c.Infer.IntraOpThreads != tt.intra {
				t.Errorf("resolved runtime_dir=%q prep.workers=%d intra_op_threads=%d, want %q %d %d",
					c.RuntimeDir, c.Prep.Workers, c.Infer.IntraOpThreads, tt.dir, tt.prep, tt.intra)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("resolved config does not validate: %v", err)
			}
			once := plainConfig(c)
			c.resolve(env(64, 5, "/other", "/other", true))
			if again := plainConfig(c); !reflect.DeepEqual(once, again) {
				t.Errorf("Resolve is not idempotent: %+v then %+v", once, again)
			}
			// The parsed (raw) config kept "auto".
			if tt.yaml == "" && !reflect.DeepEqual(raw, plainConfig(DefaultConfig())) {
				t.Errorf("parsed config %+v is not the raw default", raw)
			}
		})
	}

	c := DefaultConfig()
	c.Resolve()
	if c.RuntimeDir == "" || len(c.RuntimeDir) > MaxRuntimeDirLen {
		t.Errorf("Resolve() on this host = %+v", plainConfig(c))
	}
}

func TestConfigCheckFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.onnx")
	if err := os.WriteFile(good, []byte("onnx"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := "models:\n" +
		"  - name: good\n    path: " + good + "\n" +
		"  - name: missing\n    path: " + filepath.Join(dir, "missing.onnx") + "\n" +
		"  - name: dir\n    path: " + dir + "\n"
	c := mustParseConfig(t, data, "m.yaml")
	stubORTLibrary(t, c, dir)
	err := c.CheckFiles()
	have := configErrorLines(err)
	want := []string{
		`m.yaml:5: models[1].path: model "missing": cannot use model file "` + filepath.Join(dir, "missing.onnx") + `"`,
		`m.yaml:7: models[2].path: model "dir": model file "` + dir + `" is a directory, not a regular file`,
	}
	if len(have) != len(want) {
		t.Fatalf("CheckFiles() = %v, want %d errors", err, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(have[i], want[i]) {
			t.Errorf("error %d:\nhave %s\nwant %s...", i, have[i], want[i])
		}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(CheckFiles(), fs.ErrNotExist) = false")
	}
	if where := c.Where("models[2].path"); where != "m.yaml:7" {
		t.Errorf(`Where("models[2].path") = %q, want "m.yaml:7"`, where)
	}

	c.Models = c.Models[:1]
	if err := c.CheckFiles(); err != nil {
		t.Errorf("CheckFiles() with an existing model = %v", err)
	}
	c.ONNXRuntimeLibrary = filepath.Join(dir, "missing.so.1")
	if err := c.CheckFiles(); !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "m.yaml: onnxruntime_library: ONNX Runtime library: ") {
		t.Errorf("CheckFiles() with a missing ONNX Runtime library = %v, want an error at onnxruntime_library", err)
	}
}

// stubORTLibrary points c at a stand-in library file in dir, because
// CheckFiles only checks that the library exists, and tests of the
// other files it checks should neither fail nor skip on a host without
// ONNX Runtime (they failed there, with one error too many).
func stubORTLibrary(t *testing.T, c *Config, dir string) {
	t.Helper()
	c.ONNXRuntimeLibrary = filepath.Join(dir, "libonnxruntime.so.1")
	if err := os.WriteFile(c.ONNXRuntimeLibrary, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestConfigWhere(t *testing.T) {
	c := mustParseConfig(t, "\nprep:\n  workers: 2\n", "w.yaml")
	for field, want := range map[string]string{
		"prep.workers":          "w.yaml:3",
		"prep.upstream_timeout": "w.yaml:2", // not written: the enclosing prep key
		"listen":                "w.yaml",
	} {
		if have := c.Where(field); have != want {
			t.Errorf("Where(%q) = %q, want %q", field, have, want)
		}
	}
	if have := DefaultConfig().Where("listen"); have != "" {
		t.Errorf(`DefaultConfig().Where("listen") = %q, want ""`, have)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add(configs.Default)
	f.Add([]byte("prep:\n  workers: 2\nmodels: [{name: a, path: b}]\n"))
	f.Add([]byte("max_body_bytes: 12XB\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, "fuzz.yaml")
		if err != nil {
			return
		}
		out, err := c.YAML()
		if err != nil {
			t.Fatalf("YAML(): %v", err)
		}
		back, err := ParseConfig(out, "again.yaml")
		if err != nil {
			t.Fatalf("YAML() output does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(plainConfig(back), plainConfig(c)) {
			t.Fatalf("round trip changed the config:\n%+v\n%+v", plainConfig(c), plainConfig(back))
		}
	})
}
