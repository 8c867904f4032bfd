// Package batch is a per-model dynamic batcher with Triton's semantics: it
// queues inference requests, concatenates compatible ones along dimension 0
// into one run of the model, and splits the outputs back, so that a model
// whose cost per run dwarfs its cost per row serves many more rows a second.
//
// The model:
//
//   - Requests wait in one queue per shape key: the datatype and non-batch
//     dimensions of every input. Requests with different keys never share a
//     batch, so concatenation is always well formed.
//   - Within a key the queue is ordered by priority, then arrival. A batch is
//     the longest prefix of that order that fits in MaxBatchSize rows; it is
//     never reordered to fill a gap.
//   - A key's batch is dispatched, when an instance is free, as soon as it is
//     full (MaxBatchSize rows, or the next request would not fit), or has
//     reached a preferred size (the largest available one), or its oldest
//     request has waited MaxQueueDelay, or the Batcher is closing.
//   - At most Instances batches run at once. When several keys are ready the
//     one whose first request ranks highest goes first.
//   - A request whose context ends or whose Deadline passes while it is
//     queued leaves the queue and is never run. Once its batch has started
//     its caller gets the batch's result; the run's context ends early
//     only when every request in the batch has been abandoned
//     (Request.Watch, told by an event, hangup.go; or Request.Abandoned,
//     polled, abandon.go): one request still waited for keeps it going.
//     A request abandoned while it queues leaves the queue, unrun
//     (ErrAbandoned), as soon as its Watch tells or within abandonPoll,
//     and a batch every request of which was abandoned is not run when it
//     leaves the queue.
//   - A request marked Alone (a poison suspect's) is a batch of its own,
//     dispatched as soon as it reaches the head of its key's order and an
//     instance is free; the requests before it are dispatched without it
//     at once (nothing can join them past it), those after it wait. So it
//     never shares a run, and nobody overtakes it nor it anybody.
//   - MaxBatchSize 0 turns batching off: each request runs on its own, with
//     its shapes as given, still under the queue, priority and Instances
//     limits.
//
// BYTES inputs batch as Triton batches them: a request's Data is its
// length-prefixed elements in row-major order, so concatenating requests
// concatenates rows; BYTES outputs are split by walking the prefixes.
//
// Every request is validated against the model's metadata, and by
// Config.CheckInput, before it is queued, so that one malformed request cannot fail the others it would have
// shared a batch with.
//
// One goroutine (loop.go) owns the queue; Submit, cancellation, finished
// batches, the delay timer, hang-ups (hangup.go) and Close reach it
// through channels. Batches run
// on their own goroutines and touch only their requests and the statistics.
package batch
