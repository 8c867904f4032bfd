package worker

import "time"

// Batching is one model's dynamic batcher settings as the master passes
// them to infer workers (the config's models[].batching, Triton's
// dynamic_batching). The infer worker maps it onto internal/batch.Config;
// the fields mean what they mean there.
type Batching struct {
	// MaxBatchSize is the most rows (dimension 0) one run may carry; 0
	// means the model does not batch: requests run as they come, with
	// their shapes as given.
	MaxBatchSize int `json:"max_batch_size,omitempty"`
	// MaxQueueDelay is how long the oldest queued request may wait for
	// company before a partial batch runs.
	MaxQueueDelay time.Duration `json:"max_queue_delay,omitempty"`
	// PreferredBatchSizes are run as soon as the queue can form one.
	PreferredBatchSizes []int `json:"preferred_batch_sizes,omitempty"`
	// MaxQueueSize bounds the queued requests; beyond it a request is
	// refused at once (503 with Retry-After). 0 means the batcher's default.
	MaxQueueSize int `json:"max_queue_size,omitempty"`
	// Instances is how many batches of this model run at once in one
	// worker. 0 means 1.
	Instances int `json:"instances,omitempty"`
}

// The prep → infer request headers that carry a V2 request's scheduling
// parameters. They travel beside the tensor frame, not in it, because the
// frame is the tensors' format and these are the request's.
const (
	// PriorityHeader is the request's parameters.priority (1 is highest;
	// absent or 0 is the model's default).
	PriorityHeader = "Supervisor-Priority"
	// DeadlineHeader is when the request stops being worth starting, in
	// Unix nanoseconds: a request still queued then is refused. Prep and
	// infer workers share a host, hence a clock.
	DeadlineHeader = "Supervisor-Deadline"
	// AloneHeader, present, runs the request in a batch of its own
	// (batch.Request.Alone): the master sets it on a poison suspect, a
	// body struck once by a crash or a run timeout (supervisor/front
	// poison.go); the prep worker passes it on.
	AloneHeader = "Supervisor-Alone"
	// TokenHeader is the master's token for one inference request: a
	// decimal number, unique among the master's requests, at most
	// shm.MaxToken. The prep worker records it while it decodes the
	// request, and passes it on; the infer worker records it while the
	// request's run executes (shm.Slot.Begin). After a worker crashed the
	// master reads which tokens it was at work on, and blames the crash
	// on those requests only (supervisor/front poison.go).
	TokenHeader = "Supervisor-Token"
)

// Token reads a TokenHeader value; 0 when absent or malformed.
func Token(v []byte) uint64 {
	var n uint64
	if len(v) == 0 || len(v) > 15 {
		return 0
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}
