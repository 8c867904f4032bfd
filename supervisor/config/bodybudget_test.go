package config

import (
	"strings"
	"testing"
)

func TestParseMemTotal(t *testing.T) {
	got, err := parseMemTotal(strings.NewReader("MemFree:  100 kB\nMemTotal:       24576000 kB\n"))
	if err != nil || got != 24576000<<10 {
		t.Fatalf("parseMemTotal = %d, %v; want %d", got, err, int64(24576000)<<10)
	}
	if got, err := parseMemTotal(strings.NewReader("MemTotal: lots kB\n")); err == nil {
		t.Fatalf("a malformed MemTotal parsed as %d", got)
	}
	if b := hostBodyBudget(); b < minDefaultBodyBudget || b > maxDefaultBodyBudget {
		t.Fatalf("hostBodyBudget() = %s, outside [%d, %d]", b, minDefaultBodyBudget, maxDefaultBodyBudget)
	}
}

// TestBodyKeysErrors: the body keys are checked with the line to change.
func TestBodyKeysErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"budget under twice max_body_bytes", "max_body_bytes: 64MiB\nlimits:\n  max_body_bytes_in_flight: 100MiB\n",
			"t.yaml:3: limits.max_body_bytes_in_flight: 100MiB is less than twice max_body_bytes"},
		{"negative budget", "limits:\n  max_body_bytes_in_flight: -1\n", "t.yaml:2: limits.max_body_bytes_in_flight"},
		{"short body timeout", "limits:\n  body_timeout: 10ms\n", "t.yaml:2: limits.body_timeout: 10ms is too short"},
		{"body timeout without unit", "limits:\n  body_timeout: 10\n", `t.yaml:2: limits.body_timeout: "10" is not a duration`},
		{"bad allowed host", "metrics:\n  allowed_hosts: [\"a b\"]\n", "t.yaml:2: metrics.allowed_hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml), "t.yaml")
			checkConfigErrors(t, err, []string{tc.want})
		})
	}
	c, err := ParseConfig([]byte("max_body_bytes: 1GiB\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c.Resolve()
	if c.Limits.MaxBodyBytesInFlight < 2<<30 {
		t.Errorf("auto budget with max_body_bytes 1GiB = %s, want at least twice it", c.Limits.MaxBodyBytesInFlight)
	}
}
