// Package quarantine is the poison quarantine's guard around the
// master's forward path (front forward.go): a request body that made a
// prep or infer worker crash on its own, or its run outlive
// max_run_time, limits.poison_threshold times within limits.poison_ttl
// is refused 422 for poison_ttl before it reaches a worker
// (Guard.Around). The master's crash log tells it of crashes
// (Options.InferExited, Options.PrepExited, Guard.WorkerCrashed); the
// counts go to /metrics (Guard.Stats). The state is internal/poison's.
//
// Invariants:
//   - A strike needs evidence: the worker crashed on its own (not killed
//     from outside) while its scoreboard recorded the request's token at
//     work (blame.go); without a scoreboard every request on it is struck.
//   - A request its worker was not at work on is sent again, once; one
//     that was at work is never sent again.
//   - A suspect (struck below the threshold) runs alone
//     (worker.AloneHeader) until acquitted by a served solo run, at most
//     once per poison_ttl window.
//   - The key is what reaches the model (key.go): the body decompressed
//     and decoded, hashed from v2.WriteRequestKey, the key the prep
//     worker's response cache starts from too.
//   - Bodies are keyed only on a strike, and on arrival only while their
//     model has an entry; abandoned requests' decoding is bounded by
//     limits.poison_key_rate (keyrate.go), past which they are keyed by
//     their bytes as sent.
package quarantine
