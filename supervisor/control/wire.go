package control

import "time"

// Request is what a client sends on the control socket: one JSON object
// on one line. The master answers with one Response.
type Request struct {
	Cmd string `json:"cmd"` // "status", "reload", "upgrade" or "stop"
}

// Response is the master's answer. Error is set when the command
// failed; Status is set for "status", Result for "reload" and "upgrade".
type Response struct {
	OK     bool      `json:"ok"`
	Error  string    `json:"error,omitempty"`
	Status *Status   `json:"status,omitempty"`
	Result *OpResult `json:"result,omitempty"`
}

// Stages of a stop, as Status.Stopping names them.
const (
	// StoppingGrace: drain_grace, the lame duck: requests are still
	// served while /v2/health/ready answers 503.
	StoppingGrace = "drain_grace"
	// StoppingDrain: the listeners drain, then the workers stop.
	StoppingDrain = "draining"
)

// Status is the master's answer to `supervisor status`.
type Status struct {
	PID     int    `json:"pid"`
	Version string `json:"version"`
	Ready   bool   `json:"ready"`
	// Stopping is the stage of a stop in progress: StoppingGrace, then
	// StoppingDrain; "" = not stopping. Ready is false in both.
	Stopping   string         `json:"stopping,omitempty"`
	Listen     string         `json:"listen"`
	Started    time.Time      `json:"started"`
	Generation int64          `json:"generation"`
	Workers    []WorkerStatus `json:"workers"`
	// Degraded names the worker positions whose boots keep failing.
	Degraded []string `json:"degraded,omitempty"`
	// Models is every configured model, ready or not and why.
	Models []ModelState `json:"models,omitempty"`
	// RepositoryAPI is what the repository API (model_control: explicit)
	// changed over the config file, by model: "unloaded", "loaded",
	// "loaded with a config override", or why it is not loaded.
	RepositoryAPI map[string]string `json:"repository_api,omitempty"`
	// Quarantined counts, by model, the request bodies refused now
	// because they made their infer worker exit (limits.poison_threshold);
	// models with none are left out.
	Quarantined map[string]int `json:"poison_quarantined,omitempty"`
	// RunTimeouts counts, by model, the requests answered 500 since the
	// master started because their run outlived models[].max_run_time and
	// was stopped; models with none are left out.
	RunTimeouts map[string]int64 `json:"run_timeouts,omitempty"`
	// PoisonFallbackKeys counts the requests abandoned since the master
	// started that were remembered for the quarantine by their bytes as
	// sent, for limits.poison_key_rate was spent (or is 0).
	PoisonFallbackKeys int64 `json:"poison_fallback_keys,omitempty"`
	// Warnings are what the operator should fix though the master serves:
	// a systemd TimeoutStopSec that does not cover the config's stop
	// bound (supervisor/unitstop), with the fix. Checked at start and
	// after each reload.
	Warnings []string `json:"warnings,omitempty"`
	// LastReload and LastUpgrade are the latest outcomes, if any.
	LastReload  *OpResult `json:"last_reload,omitempty"`
	LastUpgrade *OpResult `json:"last_upgrade,omitempty"`
	// ScoreboardFaults counts the times the master found its scoreboard
	// damaged (its file truncated under the mapping) and replaced it;
	// ScoreboardError says when and why the last time. Counters of the
	// workers that ran on a damaged board are lost.
	ScoreboardFaults int    `json:"scoreboard_faults,omitempty"`
	ScoreboardError  string `json:"scoreboard_error,omitempty"`
	// Autoscale is the prep pool's autoscaler; nil when prep.max_workers
	// is 0 (off).
	Autoscale *AutoscaleStatus `json:"autoscale,omitempty"`
}

// AutoscaleStatus is the prep autoscaler as status shows it.
type AutoscaleStatus struct {
	// Workers is the prep pool's size now, between Min and Max. It
	// changes when a resize starts; Ups, Downs and Last only once the
	// resize is done, which for a shrink is after the removed workers
	// drained (seconds), so for that while Workers is ahead of them.
	Workers int `json:"workers"`
	Min     int `json:"min"`
	Max     int `json:"max"`
	// Ups and Downs count the resizes done since the master started.
	Ups   uint64 `json:"ups"`
	Downs uint64 `json:"downs"`
	// Last is the last decision, nil before the first.
	Last *AutoscaleDecision `json:"last,omitempty"`
}

// AutoscaleDecision is one resize the autoscaler decided, with its reason
// (the signal values); Error says why it failed, "" when it did not.
type AutoscaleDecision struct {
	Direction string    `json:"direction"` // "up" or "down"
	At        time.Time `json:"at"`
	From      int       `json:"from"`
	To        int       `json:"to"`
	Reason    string    `json:"reason"`
	Error     string    `json:"error,omitempty"`
}

// WorkerStatus is one slot as `supervisor status` shows it.
type WorkerStatus struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	PID      int    `json:"pid,omitempty"`
	State    string `json:"state"`
	Socket   string `json:"socket,omitempty"`
	Restarts int    `json:"restarts"`
	Recycles int    `json:"recycles"`
	LastExit string `json:"last_exit,omitempty"`
	// UnavailableModels are the models this (infer) worker does not serve,
	// with the reason: they failed to load or warm up.
	UnavailableModels map[string]string `json:"unavailable_models,omitempty"`
	// RecycleAt is the request count at which this worker asks to be
	// replaced (max_requests + its jitter); 0 = never.
	RecycleAt int `json:"recycle_at,omitempty"`
	// Generation is the config generation the worker was spawned with.
	Generation int64 `json:"generation"`
	// Device is what the worker computes on: "cpu", or "gpu <UUID>" (its
	// CUDA_VISIBLE_DEVICES). CPUs is the cpuset it is pinned to. Both are
	// empty while no process serves.
	Device string `json:"device,omitempty"`
	CPUs   string `json:"cpus,omitempty"`
	// LastReplacement is how the position last replaced its serving
	// worker (a recycle or a reload); nil until it has.
	LastReplacement *Replacement `json:"last_replacement,omitempty"`
}

// Replacement modes: a replacement boots beside the worker it replaces
// (surge) or after that worker has drained and exited (drain-first:
// both would not fit in the GPU's memory).
const (
	ReplaceSurge      = "surge"
	ReplaceDrainFirst = "drain-first"
)

// Replacement is one replacement of a position's worker.
type Replacement struct {
	Mode string `json:"mode"` // ReplaceSurge or ReplaceDrainFirst
	// Reason is why the worker was replaced: "reload", or its recycling
	// limit ("ready for 1h0m0s (max_lifetime)").
	Reason string `json:"reason"`
	// Why is what the mode rests on: the GPU memory figures for
	// drain-first ("free 9.5 GiB, worker uses 30.0 GiB"), or why a GPU
	// worker surged without them; "" for a CPU worker.
	Why string    `json:"why,omitempty"`
	At  time.Time `json:"at"`
}

// ModelState is one configured model as status, /metrics and
// strict_readiness see it.
type ModelState struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	// Reason is why it does not serve, as an infer worker reported it
	// (failed to load, failed or crashed its warm-up); "" while ready or
	// while no infer worker serves at all.
	Reason string `json:"reason,omitempty"`
	// Warning is what went wrong with a ready model that still serves:
	// an infer worker's warm-up of it failed, so its first requests pay
	// ONNX Runtime's first runs; "" for none.
	Warning string `json:"warning,omitempty"`
	// Identity is the content identity of the model file the serving
	// infer workers were started on (internal/modelid, "sha256:<hex>"):
	// which weights answer, whatever the file's name or times; "" when no
	// infer worker serves or the file could not be read.
	Identity string `json:"identity,omitempty"`
}

// StateDegraded is WorkerStatus.State for a worker position whose boots
// keep failing (the master still retries).
const StateDegraded = "degraded"

// Why is the reason a model that does not serve gives, also when no infer
// worker reported one (none serves at all).
func (st ModelState) Why() string {
	if st.Reason == "" {
		return "no infer worker serves"
	}
	return st.Reason
}

// OpResult is the outcome of a reload or an upgrade, as the CLI prints it
// and status keeps it.
type OpResult struct {
	Op         string    `json:"op"` // "reload" or "upgrade"
	OK         bool      `json:"ok"`
	Error      string    `json:"error,omitempty"`
	Generation int64     `json:"generation"`
	At         time.Time `json:"at"`
	Took       string    `json:"took"`
	// Replaced, Started and Stopped name the workers a reload changed.
	Replaced []string `json:"replaced,omitempty"`
	Started  []string `json:"started,omitempty"`
	Stopped  []string `json:"stopped,omitempty"`
	// ChangedInPlace name the infer workers a reload kept, loading the
	// models it added and retiring those it removed in place.
	ChangedInPlace []string `json:"changed_in_place,omitempty"`
	// UnavailableModels are "name: reason" for each model no infer worker
	// serves after the reload (it failed to load or warm up); the reload
	// itself succeeded and the other models serve.
	UnavailableModels []string `json:"unavailable_models,omitempty"`
	// FailedModels are the models (name -> reason) whose new file or config
	// failed to load, warm up or fit boot_timeout during the reload: their
	// previous version keeps serving with its previous config, and the
	// reload fails (OK false) naming them.
	FailedModels map[string]string `json:"failed_models,omitempty"`
	// NewPID is the master an upgrade handed over to.
	NewPID int `json:"new_pid,omitempty"`
}
