// Package configs holds the example configurations. default.yaml is
// compiled into the binary, so that `supervisor` runs with no config file
// and `supervisor check` can print the documented defaults; gpu-host.yaml is
// an example to copy, not embedded.
package configs

import _ "embed"

// Default is configs/default.yaml: the commented default configuration for
// a CPU-only host. Parsing it yields the same values as an empty file.
// Treat it as read-only.
//
//go:embed default.yaml
var Default []byte
