package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/tracing"
)

// Role names a worker's stage in the pipeline.
type Role string

// The two worker roles.
const (
	RolePrep  Role = "prep"
	RoleInfer Role = "infer"
)

// SpecEnv is the environment variable that carries the JSON Spec.
const SpecEnv = "SUPERVISOR_WORKER_SPEC"

// SpecFDEnv, set instead of SpecEnv, names the inherited descriptor the
// worker reads its JSON Spec from: for a Spec larger than MaxSpecEnvBytes
// (Linux caps one environment string at 128 KiB, which a config listing a
// few hundred models passes), which the master writes to a memfd.
const SpecFDEnv = "SUPERVISOR_WORKER_SPEC_FD"

// MaxSpecEnvBytes is the largest Spec the master passes in SpecEnv.
const MaxSpecEnvBytes = 64 << 10

// Model is one model a worker serves.
type Model struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Version is the model file's content identity (internal/modelid:
	// "sha256:<hex>" of its bytes), so a reload notices a file replaced
	// even with its old size and mtime; "" when it could not be read.
	// The infer worker hashes the file it loads itself (it may have
	// changed since) and answers with that (ModelIDHeader).
	Version string `json:"version,omitempty"`
	// Batching configures the model's batcher; nil means batching off
	// with the default queue bound and one instance.
	Batching *Batching `json:"batching,omitempty"`
	// GPU tunes the CUDA and TensorRT providers when the worker has a GPU
	// (Spec.Provider ProviderCUDA); nil means ONNX Runtime's defaults.
	GPU *ort.GPUOptions `json:"gpu,omitempty"`
	// OutputBinding is where ONNX Runtime puts the outputs (ort.Options
	// Outputs); "" means off. Pinned needs a GPU worker: a CPU worker
	// given it serves the model as unavailable (ort.ErrPinnedNeedsGPU).
	OutputBinding ort.OutputBinding `json:"output_binding,omitempty"`
	// Warmup is the warm-up policy: "" or WarmupZeros (zero inputs at
	// every batch size), WarmupNone, or the path of a V2 infer request
	// body (JSON) replayed once.
	Warmup string `json:"warmup,omitempty"`
	// MaxRunTime bounds one run of the model (models[].max_run_time): at
	// it ONNX Runtime is told to terminate the run, and the batch's
	// requests fail with a *infer.RunTimeoutError. 0 means no bound.
	MaxRunTime time.Duration `json:"max_run_time,omitempty"`
}

// Warm-up policies of Model.Warmup besides a request file.
const (
	WarmupZeros = "zeros"
	WarmupNone  = "none"
)

// Spec is everything a worker needs to know; the master computes it from the
// config and the plan. Two workers with equal Specs are interchangeable.
type Spec struct {
	Role       Role   `json:"role"`
	Name       string `json:"name"`       // slot name, e.g. "prep-0"
	Generation int    `json:"generation"` // master generation (reloads, upgrades)
	Socket     string `json:"socket"`     // Unix socket this worker listens on
	// ListenFD, when set, is the socket already listening, made by the
	// master (which may run as another user); 0 = listen on Socket.
	ListenFD int `json:"listen_fd,omitempty"`
	// RegionsFD, when set, is a prep worker's end of the socket on which
	// it asks the master for the descriptors of system shared memory
	// regions (supervisor/sysshm Reader); 0 = none: a request that names
	// a region is answered 500.
	RegionsFD int    `json:"regions_fd,omitempty"`
	LogLevel  string `json:"log_level"`

	// DrainTimeout bounds how long SIGTERM waits for in-flight requests.
	DrainTimeout time.Duration `json:"drain_timeout"`
	// BootTimeout is boot_timeout, set at spawn: the master kills a
	// worker not ready by then. A prep worker waits for its infer workers
	// to answer within it (0: asks them once).
	BootTimeout time.Duration `json:"boot_timeout,omitempty"`
	// HeartbeatInterval is how often the worker tells the master it is
	// alive (0 = never, for tests). The master kills a worker that stays
	// silent for its heartbeat timeout.
	HeartbeatInterval time.Duration `json:"heartbeat_interval,omitempty"`
	// Tracing is where the worker exports the spans of the requests the
	// master traced (internal/tracing); nil: tracing off.
	Tracing *tracing.Config `json:"tracing,omitempty"`
	// MaxRequests asks the master for a replacement after this many
	// requests (0 = never). The master has already added the jitter.
	MaxRequests int `json:"max_requests,omitempty"`

	// Infer role.
	Models     []Model `json:"models,omitempty"`
	ORTLibrary string  `json:"ort_library,omitempty"`
	// LibraryPath is the LD_LIBRARY_PATH the master starts a GPU worker
	// with (the directories of the CUDA and cuDNN libraries, then the
	// master's); "" leaves the master's. The worker only reports it.
	LibraryPath    string `json:"library_path,omitempty"`
	IntraOpThreads int    `json:"intra_op_threads,omitempty"`
	// Unavailable lists models the worker must not load, with the reason
	// to report: a previous worker of this slot died while warming them
	// up (see ModelWarming). nil = load every model.
	Unavailable map[string]string `json:"unavailable,omitempty"`

	// Prep role.
	InferSockets []string `json:"infer_sockets,omitempty"`
	MaxBodyBytes int64    `json:"max_body_bytes,omitempty"`
	// MaxHeaderBytes is the master's limits.max_header_bytes: the header
	// blocks it admits, and forwards, are this large (0: fasthttp's 4 KiB).
	MaxHeaderBytes int64 `json:"max_header_bytes,omitempty"`
	// Handoff ("shm" or "inline"), ArenaSlots and ArenaSlotBytes: how the
	// prep worker sends tensors to infer workers (see internal/arena).
	Handoff         string        `json:"handoff,omitempty"`
	ArenaSlots      int           `json:"arena_slots,omitempty"`
	ArenaSlotBytes  int64         `json:"arena_slot_bytes,omitempty"`
	UpstreamTimeout time.Duration `json:"upstream_timeout,omitempty"`
	Processing      []Processing  `json:"processing,omitempty"`
	// MaxDecodeBytes bounds the memory the prep worker's image decodes
	// hold at once (prep.max_decode_bytes); 0 means the default, sized
	// from the image models' max_pixels and the worker's CPUs.
	MaxDecodeBytes int64 `json:"max_decode_bytes,omitempty"`

	// Scoreboard is the shared-memory board the worker reports on and
	// ScoreboardSlot its slot there, claimed by the master for this
	// process; "" means no board (the worker serves unreported).
	Scoreboard     string `json:"scoreboard,omitempty"`
	ScoreboardSlot int    `json:"scoreboard_slot,omitempty"`

	// Placement (every role). CPUs is the cpuset the master started the
	// worker on, in the kernel's list format ("" = unpinned); the worker
	// sizes GOMAXPROCS to it. MemoryPolicy ("" = the kernel's default,
	// "preferred" or "bind") and NUMANode are the NUMA memory policy it
	// was started with.
	CPUs         string `json:"cpus,omitempty"`
	MemoryPolicy string `json:"memory_policy,omitempty"`
	NUMANode     int    `json:"numa_node,omitempty"`
	// Provider is an infer worker's ONNX Runtime execution provider,
	// ProviderCPU or ProviderCUDA. GPU is a CUDA worker's device (its
	// UUID, or NVML index): the master sets CUDA_VISIBLE_DEVICES to it, so
	// the worker sees its GPU as CUDA device 0 and no other.
	Provider string `json:"provider,omitempty"`
	GPU      string `json:"gpu,omitempty"`
	// GPUIndex is the GPU's NVML index, reported by Triton's model
	// configuration (instance_group gpus); set with ProviderCUDA.
	GPUIndex int `json:"gpu_index,omitempty"`
}

// Execution providers of infer workers.
const (
	ProviderCPU  = "cpu"
	ProviderCUDA = "cuda"
)

// Device names the worker's device as status shows it: the GPU, or "cpu".
func (s *Spec) Device() string {
	if s.GPU != "" {
		return "gpu " + s.GPU
	}
	return "cpu"
}

// Environ returns the environment entry that passes s to a worker.
func (s *Spec) Environ() (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encode worker spec: %w", err)
	}
	return SpecEnv + "=" + string(b), nil
}

// specFromFD reads the Spec from the descriptor SpecFDEnv names; ok is
// false when it is not set (no master started this process).
func specFromFD() (string, bool, error) {
	v, ok := os.LookupEnv(SpecFDEnv)
	if !ok {
		return "", false, errNotAWorker
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return "", false, fmt.Errorf("%s=%q: want an inherited descriptor number", SpecFDEnv, v)
	}
	f := os.NewFile(uintptr(fd), "worker-spec")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return "", false, fmt.Errorf("read the worker spec from descriptor %d: %w", fd, err)
	}
	return string(b), true, nil
}

// errNotAWorker is returned when the worker command runs outside a master.
var errNotAWorker = errors.New("the worker command is started by the supervisor master; it is not meant to be run directly (run `supervisor run` instead)")

// SpecFromEnv reads the Spec the master passed in the environment.
func SpecFromEnv() (*Spec, error) {
	raw, ok := os.LookupEnv(SpecEnv)
	if !ok {
		var err error
		if raw, ok, err = specFromFD(); err != nil || !ok {
			return nil, err
		}
	}
	var s Spec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, fmt.Errorf("decode %s: %w", SpecEnv, err)
	}
	if s.Socket == "" || s.Name == "" {
		return nil, fmt.Errorf("%s: name and socket are required", SpecEnv)
	}
	return &s, nil
}
