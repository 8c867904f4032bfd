// Package config is the master's configuration: the YAML schema (Config and
// its sections), decoding with file and line for every value, validation,
// the values resolved on the host ("auto" runtime dir, body budget), the
// checks of the files a config names (models, labels, warm-up requests,
// the ONNX Runtime library), the placement plan's inputs (Host, Plan), and
// model_control (modelcontrol.go: whether the repository API may change the
// models served; the master keeps that state, never this package).
//
// It imports affinity, internal/ort, internal/imageprep and yaml; never
// worker and never supervisor. Turning a Config into worker specs is the master's job
// (supervisor/), so the config schema can change without the worker
// protocol, and the worker protocol without the schema.
//
// Invariants:
//   - ParseConfig and LoadConfig return a Config with defaults filled in
//     and every value validated, or an error; never a half-checked Config.
//     Every problem found is reported at once, in file order, each a
//     *ConfigError ("source:LINE: field: problem (what is allowed)") that
//     matches ErrInvalidConfig.
//   - Parsing depends on the bytes alone, never on the machine: values
//     that depend on the host stay "auto" ("" or 0) until Resolve, so a
//     reload re-resolves them on the host as it is then. CheckFiles,
//     CheckModels and Plan are the steps that look at the host, each
//     called by the master (and `supervisor check`) after parsing.
//   - YAML writes every key, and its output parses back to an equal
//     Config (the fields written in the file, not Planned or the origin).
//   - Unknown keys are errors (with the known keys listed), never ignored:
//     a typo must not silently fall back to a default.
//   - One schema per section: the keys of a flat section are its struct's
//     yaml tags (fieldKeys), and so are those of a nested one (providers:
//     cuda, tensorrt); an image model's preprocess settings are
//     imageprep.Settings, which the prep workers' spec uses too
//     (worker.ImageInput), validated once, by Settings.Check.
//   - Planned is the only field set after parsing, by the master, once per
//     Config it starts workers from; a Config is otherwise read-only once
//     the master uses it (a reload builds a new one).
//
// Size: about 3,450 non-test lines, past 2,500: the schema is wide (23
// struct types, each section with its decoding, defaults and validation
// with lines, now with per-model CUDA/TensorRT options, output binding
// and run bounds) but one concept.
// The provider check, which reads the host's ONNX Runtime rather than the
// file, left for supervisor/hostcheck. What could leave next: the
// placement inputs (plan.go, ~200 lines), to a planning package beside
// affinity.
package config
