package config

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidConfig matches every *ConfigError: errors.Is(err,
// ErrInvalidConfig) tells a config that is wrong (fix the file) from one
// that could not be read at all.
var ErrInvalidConfig = errors.New("invalid config")

// ConfigError is one problem with a config, located in its file.
// Its message reads "source:LINE: field: problem (what is allowed)".
type ConfigError struct {
	Source string // the file, or a name such as "<embedded default>"; "" for a Config built in code
	Line   int    // 1-based line of the offending value or key; 0 if unknown
	// Field is the path of the offending value, such as "prep.workers" or
	// "models[1].name"; "" when the problem is not about one value (an
	// unknown key, a YAML syntax error).
	Field   string
	Problem string
	Err     error // the underlying error, if any (CheckFiles wraps os errors)
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// Unwrap returns the underlying error, so errors.Is(err, fs.ErrNotExist)
// works on CheckFiles' errors.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is makes every ConfigError match ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// joinSorted joins errs in file order, so that `supervisor check` reads
// top to bottom. It returns nil for no errors.
func joinSorted(errs []error) error {
	lineOf := func(err error) int {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return ce.Line
		}
		return 0
	}
	sort.SliceStable(errs, func(i, j int) bool { return lineOf(errs[i]) < lineOf(errs[j]) })
	return errors.Join(errs...)
}

// Validate checks every value of c, resolved or not, and reports every
// problem found (joined with errors.Join). ParseConfig calls it; call it
// again after changing a Config in code.
func (c *Config) Validate() error {
	return joinSorted(c.validate())
}

var modelNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)

type configValidator struct {
	origin configOrigin
	errs   []error
}

func (v *configValidator) errorf(field, format string, args ...any) {
	v.errs = append(v.errs, &ConfigError{
		Source:  v.origin.source,
		Line:    v.origin.line(field),
		Field:   field,
		Problem: fmt.Sprintf(format, args...),
	})
}

func (c *Config) validate() []error {
	v := &configValidator{origin: c.origin}
	v.listen(c.Listen)
	v.runtimeDir(c.RuntimeDir)
	v.limits(c.Limits)
	v.bodyBudget(c)
	v.accounts(c)
	v.auth(c.Auth)
	v.controlGroup(c)
	v.process(c)
	v.models(c.Models)
	v.modelControl(c)
	v.prep(c.Prep)
	v.autoscale(c.Prep)
	v.infer(c.Infer)
	v.maxRunTimes(c) // maxruntime.go
	v.recycle("prep", c.Prep.Recycle)
	v.recycle("infer", c.Infer.Recycle)
	v.workers(c.Workers)
	v.metrics(c)
	v.grpc(c)
	v.tracing(c)
	v.tls(c.TLS)
	v.placement(c)
	return v.errs
}

// accounts checks that workers.user and workers.group exist, blaming the
// key the lookup failed on.
func (v *configValidator) accounts(c *Config) {
	if _, err := LookupCredentials(c.Workers.User, c.Workers.Group); err != nil {
		field := "workers.user"
		var ae *AccountError
		if c.Workers.User == "" || errors.As(err, &ae) && ae.Group {
			field = "workers.group"
		}
		v.errorf(field, "%v", err)
	}
}

// controlGroup checks that control_group exists and is not the group
// the workers run in: the control socket lets its group reload, stop or
// upgrade the master, so a worker (which runs untrusted models and parses
// clients' bytes) in that group could take the master over.
func (v *configValidator) controlGroup(c *Config) {
	g := c.ControlGroup
	if g == "" {
		return
	}
	gid, err := LookupGroup(g)
	if err != nil {
		v.errorf("control_group", "%v", err)
		return
	}
	creds, err := LookupCredentials(c.Workers.User, c.Workers.Group)
	if err != nil || creds == nil {
		return // no workers' account (they run as the master), or accounts says why
	}
	if creds.GID == gid {
		which := fmt.Sprintf("workers.group (%s)", c.Workers.Group)
		if c.Workers.Group == "" {
			which = fmt.Sprintf("the primary group of workers.user (%s)", c.Workers.User)
		}
		v.errorf("control_group", "%q (gid %d) is %s: the workers could reload, stop or upgrade the master through the control socket; use a group of operators the workers are not in", g, gid, which)
	}
}

// process checks the master's own top-level settings: log level, body
// limit and timeouts.
func (v *configValidator) process(c *Config) {
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		v.errorf("log_level", "%q is not a log level (use debug, info, warn or error)", c.LogLevel)
	}
	if c.MaxBodyBytes <= 0 {
		v.errorf("max_body_bytes", "%s must be greater than 0 (e.g. 64MiB)", c.MaxBodyBytes)
	}
	if c.ShutdownTimeout.Duration < 0 {
		v.errorf("shutdown_timeout", "%s is negative (use 0 to stop without waiting, or e.g. 30s)", c.ShutdownTimeout)
	}
	if c.DrainGrace.Duration < 0 {
		v.errorf("drain_grace", "%s is negative (use 0 to drain at once, or e.g. 10s: longer than your load balancer's health-check interval × fall)", c.DrainGrace)
	}
	if c.BootTimeout.Duration <= 0 {
		v.errorf("boot_timeout", "%s must be greater than 0 (e.g. 120s)", c.BootTimeout)
	}
}

func (v *configValidator) prep(p PrepConfig) {
	if p.Workers < 0 || p.Workers > maxPrepWorkers {
		v.errorf("prep.workers", "%d is out of range (use 0 for auto, or 1 to %d)", p.Workers, maxPrepWorkers)
	}
	switch p.Handoff {
	case "shm", "inline":
	default:
		v.errorf("prep.handoff", "%q is not a handoff (use shm or inline)", p.Handoff)
	}
	if p.ArenaSlots < 1 || p.ArenaSlots > 4096 {
		v.errorf("prep.arena_slots", "%d is out of range (1 to 4096)", p.ArenaSlots)
	}
	if p.ArenaSlotBytes < 4<<10 || p.ArenaSlotBytes > 1<<30 {
		v.errorf("prep.arena_slot_bytes", "%s is out of range (4KiB to 1GiB)", p.ArenaSlotBytes)
	}
	if p.MaxDecodeBytes != 0 && p.MaxDecodeBytes < 1<<20 {
		v.errorf("prep.max_decode_bytes", "%s is under 1MiB; use 0 (sized from max_pixels and the CPUs) or at least 1MiB", p.MaxDecodeBytes)
	}
	if p.UpstreamTimeout.Duration <= 0 {
		v.errorf("prep.upstream_timeout", "%s must be greater than 0 (e.g. 60s)", p.UpstreamTimeout)
	}
}

func (v *configValidator) infer(in InferConfig) {
	if in.Workers < 1 || in.Workers > maxInferWorkers {
		v.errorf("infer.workers", "%d is out of range (use 1 to %d)", in.Workers, maxInferWorkers)
	}
	if in.IntraOpThreads < 0 || in.IntraOpThreads > maxIntraOpThreads {
		v.errorf("infer.intra_op_threads", "%d is out of range (use 0 for auto, or 1 to %d)", in.IntraOpThreads, maxIntraOpThreads)
	}
	v.providers("infer.providers", &in.Providers)
	v.outputBinding("infer.output_binding", in.OutputBinding, false)
}

func (v *configValidator) recycle(pool string, r Recycle) {
	if r.MaxRequests < 0 {
		v.errorf(pool+".max_requests", "%d is negative (use 0 for no limit)", r.MaxRequests)
	}
	if r.MaxRequestsJitter < 0 {
		v.errorf(pool+".max_requests_jitter", "%d is negative (use 0 for no jitter)", r.MaxRequestsJitter)
	}
	if r.MaxRSSBytes < 0 {
		v.errorf(pool+".max_rss_bytes", "%s is negative (use 0 for no limit)", r.MaxRSSBytes)
	}
	if r.MaxLifetime.Duration < 0 {
		v.errorf(pool+".max_lifetime", "%s is negative (use 0 for no limit)", r.MaxLifetime)
	}
}

func (v *configValidator) workers(w WorkersConfig) {
	if w.DrainTimeout.Duration < 0 {
		v.errorf("workers.drain_timeout", "%s is negative (e.g. 30s)", w.DrainTimeout)
	}
	if w.HeartbeatTimeout.Duration < 100*time.Millisecond {
		v.errorf("workers.heartbeat_timeout", "%s is too short (at least 100ms, e.g. 10s)", w.HeartbeatTimeout)
	}
	if w.RestartBackoff.Duration <= 0 {
		v.errorf("workers.restart_backoff", "%s must be greater than 0 (e.g. 100ms)", w.RestartBackoff)
	}
	if w.RestartBackoffMax.Duration < w.RestartBackoff.Duration {
		v.errorf("workers.restart_backoff_max", "%s is less than restart_backoff (%s)", w.RestartBackoffMax, w.RestartBackoff)
	}
	if w.DegradedAfter < 1 {
		v.errorf("workers.degraded_after", "%d must be at least 1", w.DegradedAfter)
	}
	if w.MaxSurge < 1 {
		v.errorf("workers.max_surge", "%d must be at least 1", w.MaxSurge)
	}
}

const listenHelp = "want host:port, e.g. 127.0.0.1:8000, or :8000 for every interface"

func (v *configValidator) listen(addr string) { v.address("listen", addr, listenHelp) }

// address checks a host:port value of field; help says what is wanted.
func (v *configValidator) address(field, addr, help string) {
	if addr == "" {
		v.errorf(field, "is empty (%s)", help)
		return
	}
	_, port, err := net.SplitHostPort(addr)
	switch {
	case !hasPortPart(addr), err == nil && port == "":
		v.errorf(field, "%q has no port (%s)", addr, help)
		return
	case err != nil:
		var ae *net.AddrError
		if errors.As(err, &ae) {
			err = errors.New(ae.Err)
		}
		v.errorf(field, "%q is not host:port: %v (%s)", addr, err, help)
		return
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		v.errorf(field, "port %q in %q is not a number from 0 to 65535", port, addr)
	}
}

// hasPortPart reports whether addr has a ":port" part at all, even an
// empty one: where it has none, net.SplitHostPort fails with "missing
// port", which this tells without reading the error's message.
func hasPortPart(addr string) bool {
	if strings.HasPrefix(addr, "[") {
		end := strings.IndexByte(addr, ']')
		return end >= 0 && strings.HasPrefix(addr[end+1:], ":")
	}
	return strings.Contains(addr, ":")
}

func (v *configValidator) runtimeDir(dir string) {
	switch {
	case dir == "":
		// auto; Resolve picks a short enough directory
	case !filepath.IsAbs(dir):
		v.errorf("runtime_dir", "%q is a relative path (use an absolute path, or \"\" for the default)", dir)
	case len(dir) > MaxRuntimeDirLen:
		v.errorf("runtime_dir", "%q is %d bytes; Unix socket paths are limited to 108 bytes, use a shorter directory (at most %d bytes)",
			dir, len(dir), MaxRuntimeDirLen)
	}
}

func (v *configValidator) models(models []ModelConfig) {
	if len(models) == 0 {
		v.errorf("models", "the list is empty (list at least one model, or remove the key to serve models/default.onnx as \"default\")")
		return
	}
	first := map[string]int{} // name -> index of its first use
	for i, m := range models {
		field := fmt.Sprintf("models[%d]", i)
		switch {
		case m.Name == "":
			v.errorf(field+".name", "is empty (every model needs a name of letters, digits, '_', '.' and '-')")
		case !modelNameRE.MatchString(m.Name):
			v.errorf(field+".name", "%q is not a valid model name (use letters, digits, '_', '.' and '-')", m.Name)
		case m.Name == "." || m.Name == "..":
			v.errorf(field+".name", "%q cannot be a model name: it is a path element in URLs", m.Name)
		default:
			if j, dup := first[m.Name]; dup {
				at := ""
				if l := v.origin.line(fmt.Sprintf("models[%d]", j)); l > 0 {
					at = fmt.Sprintf(" at line %d", l)
				}
				v.errorf(field+".name", "%q is already the name of models[%d]%s (model names must be unique)", m.Name, j, at)
			} else {
				first[m.Name] = i
			}
		}
		if m.Path == "" && len(m.Versions) == 0 {
			v.errorf(field+".path", "is empty (give the path of the model's .onnx file)")
		}
		v.modelVersions(field, m) // versions.go
		v.batching(field+".batching", m.Batching)
		v.providers(field+".providers", m.Providers)
		v.outputBinding(field+".output_binding", m.OutputBinding, true)
		v.modelProcessing(field, m)
		v.warmup(field+".warmup", m.Warmup)
		v.responseCache(field+".response_cache", m.ResponseCache)
	}
}

// dropShadowed removes validation errors about values whose decoding
// already failed: a value that could not be read keeps its default, and
// "name is empty" after "models[0] must be a mapping" is noise.
func dropShadowed(decodeErrs, validateErrs []error) []error {
	var failed []string
	for _, err := range decodeErrs {
		if ce, ok := err.(*ConfigError); ok && ce.Field != "" {
			failed = append(failed, ce.Field)
		}
	}
	kept := validateErrs[:0]
	for _, err := range validateErrs {
		ce, ok := err.(*ConfigError)
		shadowed := false
		for _, f := range failed {
			if ok && fieldWithin(ce.Field, f) {
				shadowed = true
			}
		}
		if !shadowed {
			kept = append(kept, err)
		}
	}
	return kept
}
