// Package repository is Triton's model repository extension for the
// master: POST /v2/repository/index, .../models/{m}/load and .../unload
// (http.go, ops.go), and the state those calls keep over the config file
// (repository.go), with model_control: explicit. The front
// (supervisor/front) admits the routes from their header and reads their
// body; API answers them (front.Repository). The master drives the
// reloads (Master); this package never sees workers.
//
// The model:
//   - The config served is the file as last read with the API's state
//     applied over it: unloaded models left out, a load's override
//     (override.go: batching fields only, checked) over the model's
//     settings. The state is runtime only, never written to the file; a
//     restart or an upgrade starts from the file (startup_models, or
//     every model).
//   - A load or unload is a reload: the change is recorded, then the
//     master's reload re-reads the file, plans the config to serve from it
//     and the state (Plan), stores it and commits the state (Commit). A
//     reload that fails before it stores a config changes neither: the
//     change is undone.
//   - A reload of any origin (SIGHUP, `supervisor reload`) keeps the API
//     state of models still in the file, drops it for models gone, loads
//     new models as startup_models says; model_control none drops it all.
//
// Invariants and goroutines:
//   - One API change at a time (API.ops, held across its reload); the
//     state itself is under API.mu, never held across a reload.
//   - The handler (a front connection's goroutine) waits for its change
//     on a goroutine of its own that runs it (changeRepository), looking
//     every 50 ms whether the master is stopping: a stop never waits for a
//     load's boots. A client that goes away does not cancel a change.
//   - Index answers every model of the file, in every model_control mode;
//     load and unload answer 403 unless model_control is explicit, 404 for
//     a model not in the file, and once the new generation serves (200)
//     or did not (400/503/500 with the reload's error).
package repository
