package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// Config is the master's configuration: what it listens on, which models it
// serves and how many workers of each role it runs.
//
// LoadConfig and ParseConfig return the config as written, with defaults
// filled in for missing keys and every value validated, but with the values
// that depend on the machine still unset ("" and 0 mean "auto"). Call Resolve
// before planning workers. Keeping parsing free of the machine makes it
// deterministic and lets a reload re-resolve "auto" on the host as it is now.
//
// A Config from ParseConfig remembers the file and line each value came
// from, for error messages (see Where); compare Configs field by field.
type Config struct {
	// Listen is the public HTTP (KServe V2) address, host:port. An empty
	// host (":8000") listens on every interface.
	Listen string `yaml:"listen"`
	// RuntimeDir holds the workers' Unix sockets and the control socket.
	// "" means auto; see Resolve. At most MaxRuntimeDirLen bytes.
	RuntimeDir string `yaml:"runtime_dir"`
	// ControlGroup, when set, makes the control socket group-owned by this
	// group (name or numeric id) and 0660, so its members may run the CLI;
	// "" keeps it 0600, owner only.
	ControlGroup string `yaml:"control_group"`
	// ONNXRuntimeLibrary is the path of libonnxruntime.so. "" means
	// auto-discover (the ORT_LIBRARY environment variable, next to the
	// binary, ...); the infer worker does the discovery, not the config.
	ONNXRuntimeLibrary string `yaml:"onnxruntime_library"`
	// CUDA says where GPU workers find the CUDA and cuDNN libraries.
	CUDA CUDALibraries `yaml:"cuda"`
	// LogLevel is one of debug, info, warn, error.
	LogLevel string `yaml:"log_level"`
	// MaxBodyBytes bounds a request body; larger requests get 413.
	MaxBodyBytes ByteSize `yaml:"max_body_bytes"`
	// ShutdownTimeout is how long a stop waits for in-flight requests
	// before it kills workers. 0 stops without waiting.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
	// DrainGrace is how long a stop keeps serving with /v2/health/ready
	// answering 503 before the drain starts (lame duck), so that load
	// balancers' health checks withdraw the host before its listener
	// closes. 0 (the default) drains at once. Reloadable: read at the stop.
	DrainGrace Duration `yaml:"drain_grace"`
	// BootTimeout is how long a worker may take to load its model and warm
	// up before the master gives up on it.
	BootTimeout Duration `yaml:"boot_timeout"`
	// Models are the models served, at least one. Names are unique.
	Models []ModelConfig `yaml:"models"`
	// StrictReadiness makes /v2/health/ready answer 200 only while every
	// model serves (Triton's --strict-readiness). false: 200 once every
	// pool serves, a model that failed to load or warm up being
	// unavailable on its own (see docs/model-isolation.md).
	StrictReadiness bool `yaml:"strict_readiness"`
	// ModelControl is "none" (the file says what is served) or "explicit"
	// (the repository API may load and unload models of the file at run
	// time, Triton's --model-control-mode=explicit); see modelcontrol.go.
	ModelControl string `yaml:"model_control"`
	// StartupModels, with model_control explicit, are the models of the
	// file that load without an API call; empty means every one.
	StartupModels []string `yaml:"startup_models,flow"`
	// Prep sizes the CPU stage.
	Prep PrepConfig `yaml:"prep"`
	// Infer sizes the inference stage.
	Infer InferConfig `yaml:"infer"`
	// Workers governs recycling drains, hang detection and restarts.
	Workers WorkersConfig `yaml:"workers"`
	// Limits bound clients of the public listener.
	Limits LimitsConfig `yaml:"limits"`
	// Auth is optional API-key authentication on the public listener.
	Auth AuthConfig `yaml:"auth"`
	// Metrics is the /metrics and /status listener.
	Metrics MetricsConfig `yaml:"metrics"`
	// GRPC is the KServe V2 gRPC listener.
	GRPC GRPCConfig `yaml:"grpc"`
	// TLS is the public listeners' TLS (HTTPS and gRPC over TLS).
	TLS TLSConfig `yaml:"tls"`
	// RequestLog logs slow requests and a sample of the others.
	RequestLog RequestLogConfig `yaml:"request_log"`
	// Placement reserves CPUs for the master and sets NUMA memory policy
	// and overcommit for every worker (see placement.go).
	Placement PlacementConfig `yaml:"placement"`
	// Tracing exports spans of sampled requests over OTLP (tracing.go).
	Tracing TracingConfig `yaml:"tracing"`

	// Planned is where the master placed this config's workers (the
	// result of Plan on its host); set by the master before it builds
	// worker specs, nil before. Not part of the file.
	Planned *affinity.Placement `yaml:"-"`

	origin configOrigin
	// versioned are the versions and policy of each model that lists
	// versions, as written: Models has its served versions (versions.go),
	// YAML writes them back as written.
	versioned map[string]writtenVersions
}

// ModelConfig is one served model.
type ModelConfig struct {
	// Name is the model's name in URLs (/v2/models/{name}); it matches
	// [a-zA-Z0-9_.-]+ and is neither "." nor "..".
	Name string `yaml:"name"`
	// Path is the .onnx file. A relative path is resolved against the
	// master's working directory (under systemd, WorkingDirectory=, which
	// defaults to /), so prefer absolute paths in production. Empty with
	// Versions.
	Path string `yaml:"path,omitempty"`
	// Versions are the model's versions, each its own file, instead of
	// Path; VersionPolicy picks those served (nil: the latest one). See
	// versions.go. ParseConfig replaces such a model by one entry per
	// version served, so that neither is set in a parsed Config.
	Versions      []ModelVersion `yaml:"versions,omitempty"`
	VersionPolicy *VersionPolicy `yaml:"version_policy,omitempty"`
	// Batching is the model's dynamic batcher; nil means DefaultBatching.
	Batching *BatchingConfig `yaml:"batching,omitempty"`
	// Preprocess says what clients send: the input tensors (nil, or kind
	// tensor) or encoded images (kind image). See image.go.
	Preprocess *PreprocessConfig `yaml:"preprocess,omitempty"`
	// Postprocess sets up the classification extension; nil means raw
	// scores without labels, and only on request.
	Postprocess *PostprocessConfig `yaml:"postprocess,omitempty"`
	// Providers tunes the GPU execution providers for this model; nil
	// means infer.providers.
	Providers *ProvidersConfig `yaml:"providers,omitempty"`
	// OutputBinding is where a GPU worker's ONNX Runtime puts this
	// model's outputs (see outbinding.go); "" means infer.output_binding.
	OutputBinding string `yaml:"output_binding,omitempty"`
	// Warmup is what the infer workers run before serving the model:
	// "zeros" ("" means it), "none", or a V2 request file (.json). See
	// warmup.go.
	Warmup string `yaml:"warmup,omitempty"`
	// ResponseCache caches the model's answers; nil means no cache. See
	// respcache.go.
	ResponseCache *ResponseCacheConfig `yaml:"response_cache,omitempty"`
	// MaxRunTime bounds one run of the model; 0 means
	// infer.max_run_time. See maxruntime.go.
	MaxRunTime Duration `yaml:"max_run_time,omitempty"`
}

// PrepConfig sizes the CPU stage (request parsing and preprocessing).
type PrepConfig struct {
	// Workers is the number of prep workers; 0 means auto (see Resolve).
	// With autoscaling (MaxWorkers > 0) it is the count to start with,
	// 0 meaning MinWorkers.
	Workers int `yaml:"workers"`
	// MinWorkers and MaxWorkers bound the prep pool when the master sizes
	// it itself (see Autoscale and Count); MaxWorkers 0 turns that off.
	MinWorkers int `yaml:"min_workers"`
	MaxWorkers int `yaml:"max_workers"`
	// Autoscale tunes the autoscaler's signal, windows and thresholds.
	Autoscale AutoscaleConfig `yaml:"autoscale"`
	// UpstreamTimeout bounds one prep -> infer call.
	UpstreamTimeout Duration `yaml:"upstream_timeout"`
	// Recycle says when a prep worker is replaced.
	Recycle `yaml:",inline"`
	// CPUs are the CPUs prep workers are placed on: "auto" (what the
	// master and infer workers leave) or a CPU list such as "2-7".
	CPUs string `yaml:"cpus"`
	// CPUsPerWorker is each prep worker's share; 0 means one core (its
	// hyper-thread siblings together).
	CPUsPerWorker int `yaml:"cpus_per_worker"`
	// Handoff is how tensors travel to infer workers: "shm" (a slot of the
	// prep worker's shared-memory arena; only the slot's number is sent)
	// or "inline" (in the request body). A frame larger than a slot goes
	// inline either way.
	Handoff string `yaml:"handoff"`
	// ArenaSlots is the number of requests a prep worker can have in its
	// arena at once; beyond it a request waits (at most a second), then
	// gets 503. ArenaSlotBytes is each slot's size.
	ArenaSlots     int      `yaml:"arena_slots"`
	ArenaSlotBytes ByteSize `yaml:"arena_slot_bytes"`
	// MaxDecodeBytes bounds the memory one prep worker's image decodes
	// hold at once (worker/prep's decode gate); 0 means 8 bytes for each
	// pixel of the largest max_pixels plus 16 MiB per CPU of the worker.
	MaxDecodeBytes ByteSize `yaml:"max_decode_bytes"`
}

// InferConfig sizes the inference stage.
type InferConfig struct {
	// Workers is the number of infer workers on a host without GPUs (or
	// with GPUs set to []), each running the CPU execution provider. With
	// GPUs there is one infer worker per GPU and Workers is not used.
	Workers int `yaml:"workers"`
	// IntraOpThreads is ONNX Runtime's intra-op thread count per infer
	// worker; 0 means the size of the worker's cpuset.
	IntraOpThreads int `yaml:"intra_op_threads"`
	// MaxRunTime bounds one run of every model without its own
	// max_run_time; 0 means half of prep.upstream_timeout. See
	// maxruntime.go.
	MaxRunTime Duration `yaml:"max_run_time"`
	// Recycle says when an infer worker is replaced.
	Recycle `yaml:",inline"`
	// GPUs are the GPUs that get an infer worker each (CUDA execution
	// provider); the zero value is auto.
	GPUs GPUSelection `yaml:"gpus"`
	// Providers is every model's GPU provider options, unless the model
	// has its own (ModelConfig.Providers).
	Providers ProvidersConfig `yaml:"providers"`
	// OutputBinding is every model's output binding, unless the model
	// has its own: "off" (the default) or "pinned" (see outbinding.go).
	OutputBinding string `yaml:"output_binding"`
	// CPUs are the CPUs infer workers are placed on: "auto" or a CPU list.
	CPUs string `yaml:"cpus"`
	// CPUsPerWorker is each infer worker's share; 0 means one core for a
	// GPU's worker and an even split of half the CPUs on a CPU-only host.
	CPUsPerWorker int `yaml:"cpus_per_worker"`
}

// Recycle holds a pool's recycling limits (gunicorn semantics); 0 turns a
// limit off. A worker that reaches one is replaced surge-first: its
// replacement boots and takes traffic before it is drained and stopped.
type Recycle struct {
	// MaxRequests recycles a worker after it has served this many
	// requests, plus a uniform random integer in [0, MaxRequestsJitter]
	// drawn at spawn, so a pool's workers do not all recycle at once.
	MaxRequests       int `yaml:"max_requests"`
	MaxRequestsJitter int `yaml:"max_requests_jitter"`
	// MaxRSSBytes recycles a worker whose resident memory exceeds it.
	MaxRSSBytes ByteSize `yaml:"max_rss_bytes"`
	// MaxLifetime recycles a worker this long after it became ready.
	MaxLifetime Duration `yaml:"max_lifetime"`
}

// WorkersConfig governs every worker's lifecycle.
type WorkersConfig struct {
	// DrainTimeout bounds how long a recycled worker may take to finish
	// its in-flight requests before it is stopped.
	DrainTimeout Duration `yaml:"drain_timeout"`
	// HeartbeatTimeout: a ready worker silent for this long is hung; it is
	// killed and replaced. Model loading is governed by boot_timeout.
	HeartbeatTimeout Duration `yaml:"heartbeat_timeout"`
	// RestartBackoff and RestartBackoffMax: after an unexpected exit or a
	// failed boot, wait RestartBackoff, doubling up to RestartBackoffMax.
	RestartBackoff    Duration `yaml:"restart_backoff"`
	RestartBackoffMax Duration `yaml:"restart_backoff_max"`
	// DegradedAfter consecutive failed boots mark a worker position degraded in status
	// (the master keeps retrying at RestartBackoffMax).
	DegradedAfter int `yaml:"degraded_after"`
	// MaxSurge bounds how many replacements of one pool boot at once.
	MaxSurge int `yaml:"max_surge"`
	// User and Group the workers run as (names or ids). "" runs them as
	// the master's user. Setting them needs a root master: it keeps root
	// for sockets, placement and upgrades, and each worker drops to User
	// before its first instruction.
	User  string `yaml:"user"`
	Group string `yaml:"group"`
}

// MaxRuntimeDirLen is the longest RuntimeDir accepted. A Unix socket path
// (sun_path) holds at most 108 bytes including the final NUL; this leaves 27
// bytes for "/" and a socket name such as "prep-255.sock" or "control.sock".
const MaxRuntimeDirLen = 80

// Limits on worker counts. They catch typos (workers: 1000) before the
// master forks a thousand processes.
const (
	maxPrepWorkers    = 256
	maxInferWorkers   = 64
	maxIntraOpThreads = 1024
)

// DefaultConfig returns the configuration an empty file yields: the values
// documented in configs/default.yaml, with "auto" values still unresolved.
func DefaultConfig() *Config {
	return &Config{
		Listen:          "127.0.0.1:8000",
		LogLevel:        "info",
		MaxBodyBytes:    64 << 20,
		ShutdownTimeout: Duration{30 * time.Second},
		BootTimeout:     Duration{120 * time.Second},
		ModelControl:    ModelControlNone,
		Models:          []ModelConfig{{Name: "default", Path: "models/default.onnx", Batching: DefaultBatching()}},
		Prep: PrepConfig{Workers: 0, MinWorkers: 1, Autoscale: defaultAutoscale(), UpstreamTimeout: Duration{60 * time.Second}, CPUs: autoValue,
			Handoff: "shm", ArenaSlots: 64, ArenaSlotBytes: 16 << 20},
		Infer: InferConfig{Workers: 1, IntraOpThreads: 0, CPUs: autoValue, Providers: DefaultProviders(), OutputBinding: outputBindingOff},
		Workers: WorkersConfig{
			DrainTimeout:      Duration{30 * time.Second},
			HeartbeatTimeout:  Duration{10 * time.Second},
			RestartBackoff:    Duration{100 * time.Millisecond},
			RestartBackoffMax: Duration{30 * time.Second},
			DegradedAfter:     5,
			MaxSurge:          1,
		},
		Limits:     defaultLimits(),
		Auth:       defaultAuth(),
		Metrics:    defaultMetrics(),
		GRPC:       defaultGRPC(),
		RequestLog: defaultRequestLog(),
		Placement:  PlacementConfig{MasterCPUs: autoValue, NUMAMemory: "none"},
		Tracing:    defaultTracing(),
	}
}

// LoadConfig reads and parses the config file at path; see ParseConfig.
// The result is not resolved.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the config file: %w", err)
	}
	return ParseConfig(data, path)
}

// ParseConfig parses one YAML document strictly: unknown keys, values of the
// wrong type, invalid values and a second document are all errors. Every
// problem found is reported, joined with errors.Join, each as a *ConfigError
// that reads "source:LINE: field: problem (what is allowed)". Keys that are
// missing, or present with no value, keep their defaults. The result is
// validated but not resolved, and ParseConfig does not look at the model
// files (see CheckFiles).
func ParseConfig(data []byte, source string) (*Config, error) {
	if source == "" {
		source = "<config>"
	}
	c := DefaultConfig()
	c.origin = configOrigin{source: source, lines: map[string]int{}}
	root, err := readDocument(data, source)
	if err != nil {
		return nil, err
	}
	d := &configDecoder{source: source, lines: c.origin.lines}
	if root != nil {
		d.config(root, c)
	}
	errs := append(d.errs, dropShadowed(d.errs, c.validate())...)
	if len(errs) > 0 {
		return nil, joinSorted(errs)
	}
	c.expandVersions() // versions.go
	return c, nil
}

// readDocument decodes the only YAML document in data. It returns nil for
// an empty file (or one with only comments).
func readDocument(data []byte, source string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(source, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &ConfigError{Source: source, Line: next.Line,
			Problem: "a second YAML document starts here (a config file holds one document; remove this \"---\" and what follows, or merge it into the first)"}
	case !errors.Is(err, io.EOF):
		return nil, syntaxError(source, err)
	}
	return doc.Content[0], nil
}

// Where returns "source:line" for the value at a field path such as
// "listen" or "models[1].path", falling back to the nearest enclosing key
// that was written in the file, then to the source alone. It returns ""
// for a Config that was not parsed (DefaultConfig, or built in code).
func (c *Config) Where(field string) string {
	if c.origin.source == "" {
		return ""
	}
	if line := c.origin.line(field); line > 0 {
		return c.origin.source + ":" + strconv.Itoa(line)
	}
	return c.origin.source
}

// StopBound is the longest a clean stop takes: drain_grace (lame duck),
// then the public listener's drain and the workers' stop, each bounded by
// shutdown_timeout. What waits for a stop (`supervisor stop`, systemd's
// TimeoutStopSec, Kubernetes' terminationGracePeriodSeconds) must allow
// more.
func (c *Config) StopBound() time.Duration {
	return c.DrainGrace.Duration + 2*c.ShutdownTimeout.Duration
}

// ServesModel reports whether a model of that name is configured (any
// of its versions: versions.go).
func (c *Config) ServesModel(name string) bool {
	for _, mc := range c.Models {
		if model, _ := v2.SplitServedName(mc.Name); model == name {
			return true
		}
	}
	return false
}

// YAML returns the config as YAML, every key present, in the order of
// configs/default.yaml: what `supervisor check` prints. Its output parses
// back to an equal Config.
func (c *Config) YAML() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c.asWritten()); err != nil {
		return nil, fmt.Errorf("cannot write the config as YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("cannot write the config as YAML: %w", err)
	}
	return buf.Bytes(), nil
}

// Resolve replaces "auto" values with what they mean on this machine, in
// place. It is idempotent and leaves explicit values alone:
//
//   - runtime_dir "": /run/supervisor when running as root and /run is
//     writable, else $XDG_RUNTIME_DIR/supervisor, else
//     os.TempDir()/supervisor-<uid>; a candidate longer than
//     MaxRuntimeDirLen is skipped, and /tmp/supervisor-<uid> is the last
//     resort. Resolve does not create the directory.
//
// prep.workers 0 and infer.intra_op_threads 0 stay 0: the placement plan
// (Plan) decides them per worker from the machine's topology, the number
// of prep workers from the cores left, the threads from each cpuset.
func (c *Config) Resolve() {
	c.resolve(hostResolveEnv())
}

// resolveEnv is what Resolve asks of the machine; tests fake it.
type resolveEnv struct {
	numCPU      int
	euid        int
	getenv      func(string) string
	tempDir     string
	runWritable func() bool
}

func hostResolveEnv() resolveEnv {
	return resolveEnv{
		numCPU:      runtime.NumCPU(),
		euid:        os.Geteuid(),
		getenv:      os.Getenv,
		tempDir:     os.TempDir(),
		runWritable: func() bool { return dirWritable("/run") },
	}
}

func (c *Config) resolve(env resolveEnv) {
	if c.RuntimeDir == "" {
		c.RuntimeDir = defaultRuntimeDir(env)
	}
	if c.Limits.MaxBodyBytesInFlight == 0 {
		c.Limits.MaxBodyBytesInFlight = autoBodyBudget(c.MaxBodyBytes)
	}
}

// dirWritable reports whether this process may create entries in dir.
func dirWritable(dir string) bool {
	const wOK = 2 // W_OK in <unistd.h>
	return syscall.Access(dir, wOK) == nil
}

func defaultRuntimeDir(env resolveEnv) string {
	uid := strconv.Itoa(env.euid)
	var candidates []string
	if env.euid == 0 && env.runWritable() {
		candidates = append(candidates, "/run/supervisor")
	}
	if xdg := env.getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		candidates = append(candidates, filepath.Join(xdg, "supervisor"))
	}
	if filepath.IsAbs(env.tempDir) {
		candidates = append(candidates, filepath.Join(env.tempDir, "supervisor-"+uid))
	}
	for _, dir := range candidates {
		if len(dir) <= MaxRuntimeDirLen {
			return dir
		}
	}
	return "/tmp/supervisor-" + uid
}

// CheckFiles checks that every model's path names an existing regular file,
// the check ParseConfig leaves out so that a config can be validated away
// from the host that will serve it. Every missing model is reported, with
// the config line that names it.
func (c *Config) CheckFiles() error {
	var errs []error
	if err := c.checkORTLibrary(); err != nil {
		errs = append(errs, &ConfigError{Source: c.origin.source, Line: c.origin.line("onnxruntime_library"),
			Field: "onnxruntime_library", Problem: err.Error(), Err: err})
	}
	for i, m := range c.Models {
		if err := checkModelFile(m.Path); err != nil {
			field := fmt.Sprintf("models[%d].path", i)
			errs = append(errs, &ConfigError{
				Source:  c.origin.source,
				Line:    c.origin.line(field),
				Field:   field,
				Problem: fmt.Sprintf("model %q: %v", m.Name, err),
				Err:     err,
			})
		}
	}
	for i, d := range c.CUDA.LibraryDirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			field := fmt.Sprintf("cuda.library_dirs[%d]", i)
			errs = append(errs, &ConfigError{Source: c.origin.source, Line: c.origin.line("cuda.library_dirs"), Field: field,
				Problem: fmt.Sprintf("%q is not a directory on this host (a directory holding CUDA or cuDNN libraries, such as a wheel's site-packages/nvidia/cublas/lib)", d)})
		}
	}
	errs = append(errs, c.labelsFileErrors()...)
	errs = append(errs, c.warmupFileErrors()...)
	return joinSorted(errs)
}

// checkORTLibrary checks that the library workers will load exists: the
// configured path, or the one ort.FindLibrary finds.
func (c *Config) checkORTLibrary() error {
	if c.ONNXRuntimeLibrary == "" {
		_, err := ort.FindLibrary()
		return err
	}
	if _, err := os.Stat(c.ONNXRuntimeLibrary); err != nil {
		return fmt.Errorf("ONNX Runtime library: %w", err)
	}
	return nil
}

func checkModelFile(path string) error {
	return checkRegularFile(path, "model file", "the .onnx file")
}

// checkRegularFile checks that path names a regular file; what names the
// file in the message and want what to give instead.
func checkRegularFile(path, what, want string) error {
	fi, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the message already names the path
		}
		hint := ""
		if !filepath.IsAbs(path) {
			wd, _ := os.Getwd()
			hint = fmt.Sprintf("; relative paths are resolved against the working directory %q", wd)
		}
		return fmt.Errorf("cannot use %s %q: %w (give the path of %s%s)", what, path, err, want, hint)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s %q is a %s, not a regular file (give the path of %s)", what, path, fileKindName(fi.Mode()), want)
	}
	return nil
}

func fileKindName(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// RuntimeDirOf reads only runtime_dir from a config file, leniently: the
// CLI uses it to reach a master when the file as a whole does not load
// (the master then reports the errors). "" when it cannot tell.
func RuntimeDirOf(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var partial struct {
		RuntimeDir string `yaml:"runtime_dir"`
	}
	if yaml.Unmarshal(data, &partial) == nil {
		return partial.RuntimeDir
	}
	// Broken YAML elsewhere: look for the key's own line.
	if m := runtimeDirLine.FindSubmatch(data); m != nil {
		return strings.Trim(string(m[1]), `"' `)
	}
	return ""
}

var runtimeDirLine = regexp.MustCompile(`(?m)^runtime_dir:[ \t]*([^#\n]*)`)

// CUDALibraries are the directories searched, ahead of those found by
// themselves (LD_LIBRARY_PATH, CUDA_HOME, Python wheels' nvidia/*/lib,
// the loader's; internal/cudalib), for the CUDA and cuDNN libraries the
// GPU build of ONNX Runtime loads. GPU workers get the directories that
// hold them on their LD_LIBRARY_PATH.
type CUDALibraries struct {
	LibraryDirs []string `yaml:"library_dirs"`
}
