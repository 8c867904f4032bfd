package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration that reads and writes YAML as a Go duration
// string ("30s", "1m30s", "500ms"), so config files stay readable and a
// bare number ("30") is rejected instead of silently meaning nanoseconds.
type Duration struct {
	time.Duration
}

// parseDuration parses a config duration. The message says what is allowed
// because it ends up in front of an operator, not a programmer.
func parseDuration(s string) (Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return Duration{}, fmt.Errorf("%q is not a duration (use Go syntax such as 30s, 1m30s or 500ms)", s)
	}
	return Duration{d}, nil
}

// String formats d as ParseDuration reads it, without the zero units
// time.Duration.String adds: "2m" rather than "2m0s", "1h" rather than "1h0m0s".
func (d Duration) String() string {
	s := d.Duration.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// UnmarshalYAML reads a duration string such as "30s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 30s, got %s", n.Line, yamlKindName(n))
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = v
	return nil
}

// MarshalYAML writes d as a duration string such as "30s".
func (d Duration) MarshalYAML() (any, error) {
	return d.String(), nil
}

// ByteSize is a size in bytes. In YAML it is either an integer (bytes) or a
// whole number with a unit: B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB,
// GB, TB (powers of 1000). Units are case-sensitive so that "Mb" (megabits)
// cannot be mistaken for "MB".
type ByteSize int64

// Binary units come first so that String prefers them when two fit.
var byteUnits = []struct {
	name string
	size int64
}{
	{"TiB", 1 << 40},
	{"GiB", 1 << 30},
	{"MiB", 1 << 20},
	{"KiB", 1 << 10},
	{"TB", 1e12},
	{"GB", 1e9},
	{"MB", 1e6},
	{"KB", 1e3},
	{"B", 1},
}

const byteSizeHelp = "use a whole number of bytes, or one with a unit: KiB, MiB, GiB, TiB, KB, MB, GB, TB; e.g. 64MiB"

// parseByteSize parses "64MiB", "64 MiB", "1000000" or "512B".
func parseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if num == "" {
		return 0, fmt.Errorf("%q is not a size (%s)", s, byteSizeHelp)
	}
	mult := int64(1)
	if unit != "" {
		mult = 0
		for _, u := range byteUnits {
			if u.name == unit {
				mult = u.size
			}
		}
		if mult == 0 {
			return 0, fmt.Errorf("%q is not a size: unknown unit %q (%s)", s, unit, byteSizeHelp)
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large (at most 8EiB)", s)
	}
	return ByteSize(n * mult), nil
}

// String formats b exactly, with the unit that gives the smallest number
// ("64MiB", "2GB", "1500B"); parseByteSize reads it back to the same value.
func (b ByteSize) String() string {
	if b <= 0 {
		return strconv.FormatInt(int64(b), 10)
	}
	best := byteUnits[len(byteUnits)-1] // B
	for _, u := range byteUnits {
		if int64(b)%u.size == 0 && u.size > best.size {
			best = u
		}
	}
	return strconv.FormatInt(int64(b)/best.size, 10) + best.name
}

// UnmarshalYAML reads an integer number of bytes or a size such as "64MiB".
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := byteSizeFromNode(n)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = v
	return nil
}

// byteSizeFromNode accepts YAML integers in any YAML notation (1_000, 0x100)
// as well as size strings.
func byteSizeFromNode(n *yaml.Node) (ByteSize, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("want a size such as 64MiB, got %s", yamlKindName(n))
	}
	if n.ShortTag() == "!!int" {
		var v int64
		if err := n.Decode(&v); err != nil {
			return 0, fmt.Errorf("%q is too large (at most 8EiB)", n.Value)
		}
		return ByteSize(v), nil
	}
	return parseByteSize(n.Value)
}

// MarshalYAML writes b as String does; sizes that are not positive are
// written as plain integers.
func (b ByteSize) MarshalYAML() (any, error) {
	if b <= 0 {
		return int64(b), nil
	}
	return b.String(), nil
}

// yamlKindName names a node's kind the way an operator reads YAML.
func yamlKindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping (key: value lines)"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "a YAML document"
}
