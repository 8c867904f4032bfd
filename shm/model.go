package shm

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Failure is why an inference request failed, as Triton's
// nv_inference_request_failure "reason" label names it.
type Failure int

// The failure reasons. Success is not a failure: it counts the request as
// successful.
const (
	Success  Failure = iota - 1
	Rejected         // overloaded: queue full, expired in the queue, no worker (503)
	Canceled         // the client went away
	Backend          // the model run failed (500, 502)
	Other            // anything else: invalid input, too large, timed out
)

const failureReasons = 4

// String returns Triton's label value: "REJECTED", "CANCELED", "BACKEND",
// "OTHER"; "SUCCESS" for Success.
func (f Failure) String() string {
	switch f {
	case Success:
		return "SUCCESS"
	case Rejected:
		return "REJECTED"
	case Canceled:
		return "CANCELED"
	case Backend:
		return "BACKEND"
	case Other:
		return "OTHER"
	}
	return fmt.Sprintf("failure(%d)", int(f))
}

// Failures lists the failure reasons in label order.
func Failures() []Failure { return []Failure{Rejected, Canceled, Backend, Other} }

// ModelSlot is one model's counters in a worker's slot. The zero ModelSlot
// (a model beyond MaxModels, or no board) discards everything, so callers
// need no checks. Like Slot, it is lock-free and never allocates.
type ModelSlot struct {
	l *modelLayout
}

// Model returns the counters of the worker's i-th model (its position in
// Identity.Models); the zero ModelSlot when i is out of range or s is nil.
func (s *Slot) Model(i int) ModelSlot {
	if s == nil || i < 0 || i >= MaxModels {
		return ModelSlot{}
	}
	return ModelSlot{&s.l.perModel[i]}
}

// RequestFinished counts one inference request of the model: a success
// (its duration is summed) or a failure by reason.
func (m ModelSlot) RequestFinished(d time.Duration, f Failure) {
	if m.l == nil {
		return
	}
	if f == Success {
		atomic.AddUint64(&m.l.success, 1)
		atomic.AddUint64(&m.l.requestNanos, nonNegative(d))
		return
	}
	if f < 0 || int(f) >= failureReasons {
		f = Other
	}
	atomic.AddUint64(&m.l.failures[f], 1)
}

// ObserveQueueTime records how long one request of the model waited in
// the queue before its batch started.
func (m ModelSlot) ObserveQueueTime(d time.Duration) {
	if m.l == nil {
		return
	}
	atomic.AddUint64(&m.l.queueCount, 1)
	atomic.AddUint64(&m.l.queueNanos, nonNegative(d))
}

// BatchExecuted records one batch of the model: requests in it, rows run,
// whether it succeeded and its compute phases (input, infer, output), each
// charged to every request of the batch as Triton does.
func (m ModelSlot) BatchExecuted(requests, rows int, ok bool, input, infer, output time.Duration) {
	if m.l == nil || !ok {
		return
	}
	n := uint64(max(requests, 0))
	atomic.AddUint64(&m.l.inferences, uint64(max(rows, 0)))
	atomic.AddUint64(&m.l.executions, 1)
	atomic.AddUint64(&m.l.computeInput, n*nonNegative(input))
	atomic.AddUint64(&m.l.computeInfer, n*nonNegative(infer))
	atomic.AddUint64(&m.l.computeOutput, n*nonNegative(output))
}

// ModelSnapshot is a copy of one model's counters in a slot.
type ModelSnapshot struct {
	Name     string
	Success  uint64
	Failures [failureReasons]uint64 // indexed by Failure
	// Durations are totals over requests (Triton's *_duration_us
	// counters): RequestTime over successful requests, QueueTime over
	// QueueCount requests, Compute* over the requests of successful
	// batches.
	RequestTime, QueueTime                 time.Duration
	QueueCount                             uint64
	Inferences, Executions                 uint64
	ComputeInput, ComputeInfer, ComputeOut time.Duration
}

// Failed returns the failures of every reason.
func (m ModelSnapshot) Failed() uint64 {
	var n uint64
	for _, f := range m.Failures {
		n += f
	}
	return n
}

// Add adds o's counters to m (Name is kept).
func (m *ModelSnapshot) Add(o ModelSnapshot) {
	m.Success += o.Success
	for i := range m.Failures {
		m.Failures[i] += o.Failures[i]
	}
	m.RequestTime += o.RequestTime
	m.QueueTime += o.QueueTime
	m.QueueCount += o.QueueCount
	m.Inferences += o.Inferences
	m.Executions += o.Executions
	m.ComputeInput += o.ComputeInput
	m.ComputeInfer += o.ComputeInfer
	m.ComputeOut += o.ComputeOut
}

func decodeModel(name string, l *modelLayout) ModelSnapshot {
	return ModelSnapshot{
		Name: name, Success: l.success, Failures: l.failures,
		RequestTime: time.Duration(l.requestNanos), QueueTime: time.Duration(l.queueNanos), QueueCount: l.queueCount,
		Inferences: l.inferences, Executions: l.executions,
		ComputeInput: time.Duration(l.computeInput), ComputeInfer: time.Duration(l.computeInfer),
		ComputeOut: time.Duration(l.computeOutput),
	}
}
