package config

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
)

// limits.max_body_bytes_in_flight: auto (0) is an eighth of the host's
// memory, at least 256 MiB and at most 8 GiB, and never less than twice
// max_body_bytes. Bodies are the only part of
// the master that grows with clients, the workers (ONNX Runtime sessions,
// arenas, the prep workers' copies of the bodies the master forwards) need
// the rest, and an eighth of a 24 GiB host still holds 48 bodies of the
// default max_body_bytes (64 MiB) at once, more than the prep workers
// parse at a time.
const (
	minDefaultBodyBudget = 256 << 20
	maxDefaultBodyBudget = 8 << 30
	// fallbackBodyBudget is used when /proc/meminfo cannot be read.
	fallbackBodyBudget = 1 << 30
)

func autoBodyBudget(maxBody ByteSize) ByteSize {
	return max(hostBodyBudget(), 2*maxBody)
}

// hostBodyBudget is an eighth of /proc/meminfo's MemTotal, clamped.
func hostBodyBudget() ByteSize {
	total, err := readMemTotal("/proc/meminfo")
	if err != nil || total <= 0 {
		return fallbackBodyBudget
	}
	return ByteSize(min(max(total/8, minDefaultBodyBudget), maxDefaultBodyBudget))
}

// BodyBudgetLimit is the limits.max_body_bytes_in_flight in force: the
// configured one, or auto for a config that was not resolved.
func (c *Config) BodyBudgetLimit() int64 {
	if b := c.Limits.MaxBodyBytesInFlight; b > 0 {
		return int64(b)
	}
	return int64(autoBodyBudget(c.MaxBodyBytes))
}

// readMemTotal reads MemTotal (bytes) from a meminfo file.
func readMemTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseMemTotal(f)
}

// parseMemTotal finds "MemTotal: <n> kB"; 0 when it is missing.
func parseMemTotal(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, err
		}
		return kb << 10, nil
	}
	return 0, sc.Err()
}

// bodyBudget checks the body keys against each other: the budget must
// hold the largest body beside the share kept for small ones (an eighth),
// and a chunked body reserves up to twice its size while it grows.
func (v *configValidator) bodyBudget(c *Config) {
	l := c.Limits
	if l.MaxBodyBytesInFlight < 0 {
		v.errorf("limits.max_body_bytes_in_flight", "%s is negative (0 = auto: an eighth of the host's memory)", l.MaxBodyBytesInFlight)
	} else if l.MaxBodyBytesInFlight != 0 && l.MaxBodyBytesInFlight < 2*c.MaxBodyBytes {
		v.errorf("limits.max_body_bytes_in_flight", "%s is less than twice max_body_bytes (%s): the largest body could never be admitted; raise it or lower max_body_bytes",
			l.MaxBodyBytesInFlight, c.MaxBodyBytes)
	}
	if l.BodyMinRate < 0 {
		v.errorf("limits.body_min_rate", "%s is negative (bytes per second; 0 = the whole body within body_timeout)", l.BodyMinRate)
	}
}
