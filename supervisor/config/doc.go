// Package config is the master's configuration: the YAML schema (Config
// and its sections), decoding with file and line for every value,
// validation, the values resolved on the host, the checks of the files a
// config names (CheckFiles; loading the models is
// supervisor/config/modelcheck) and the placement plan's inputs
// (the plan itself is supervisor/config/plan). It never imports worker or supervisor: turning a Config
// into worker specs is the master's job, so schema and worker protocol
// change independently.
//
// Invariants:
//
//   - ParseConfig and LoadConfig return a Config with defaults filled in
//     and every value validated, or every problem at once, in file order,
//     each a *ConfigError ("source:LINE: field: problem (what is
//     allowed)") matching ErrInvalidConfig; never a half-checked Config.
//   - Unknown keys are errors listing the known keys, never ignored.
//   - Parsing depends on the bytes alone: host-dependent values stay
//     "auto" until Resolve, so a reload re-resolves them on the host as it
//     is then. CheckFiles, modelcheck.Load and plan.Place are the steps that look
//     at the host.
//   - YAML writes every key, and its output parses back to an equal Config.
//   - One schema per section: a section's keys are its struct's yaml tags
//     (fieldKeys); an image model's preprocess is imageprep.Settings,
//     validated once by Settings.Check.
//   - Planned is the only field set after parsing, by the master; a Config
//     is otherwise read-only once in use (a reload builds a new one).
//   - model_control (modelcontrol.go) says whether the repository API may
//     change the models served; that state is the master's, never kept here.
//
// Size: about 3,800 non-test lines, over the 2,500 a package should stay
// under, and one package on purpose. The schema is one tree whose every
// section is decoded by the one configDecoder (file and line per value,
// unknown keys listed) and checked by the one configValidator (every
// problem at once, in file order), so a section could leave only with
// the decoder and validator exported, or an interface per section, which
// would turn the schema's internals into an API for a line count. What
// reads the host rather than the file has left (supervisor/config/plan,
// supervisor/config/modelcheck), and the next split, should the package
// grow, is the decoder and validator as a schema package with the
// sections' types beside it.
//
// The keys and defaults for operators: docs/configuration.md.
package config
