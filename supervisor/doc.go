// Package supervisor is the master process: it loads and validates the
// config, plans the workers, spawns them (re-executing its own binary),
// keeps every slot filled with a ready worker, serves the public listener
// through the least-connections lb, answers the control socket, and stops
// everything in order.
//
// Invariants:
//   - The public listener answers 503 until every pool has a ready worker;
//     /v2/health/ready says so.
//   - Infer workers boot before prep workers (prep learns model metadata
//     from an infer worker).
//   - Only ready prep workers are in the lb pool; a worker that exits is
//     taken out before it is replaced.
//   - A model that fails to load or warm up makes only itself unavailable:
//     infer workers report each model's state on their event pipe before
//     "ok" (worker.ModelState). A worker that dies while warming a model is
//     booted again at once without it (slot.skipped, keyed by the model's
//     path and file version): at most one extra boot per model, never a
//     crash loop. strict_readiness adds "every model serves" to
//     /v2/health/ready.
//   - Stop drains in order: the public listener (in-flight requests finish,
//     bounded by shutdown_timeout), then prep workers, then infer workers.
//     Run returns only when every worker has been reaped.
package supervisor
