package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The config is decoded by walking the yaml.Node tree rather than with
// yaml.Decoder.KnownFields: the walk knows the line of every value, keeps
// going after a bad value so that all problems are reported at once, and
// phrases messages for operators ("unknown key "workerz" in prep") rather
// than in Go types ("field workerz not found in type supervisor.PrepConfig").

// configOrigin records where a parsed Config's values came from.
type configOrigin struct {
	source string
	lines  map[string]int // field path ("models[1].path") -> line of its value
}

// line returns the line of field, or of its nearest enclosing field that
// was written in the file, or 0.
func (o configOrigin) line(field string) int {
	for field != "" {
		if l, ok := o.lines[field]; ok {
			return l
		}
		field = parentFieldPath(field)
	}
	return 0
}

// parentFieldPath returns "models[1]" for "models[1].path", "models" for
// "models[1]" and "" for "models".
func parentFieldPath(field string) string {
	i := strings.LastIndexAny(field, ".[")
	if i < 0 {
		return ""
	}
	return field[:i]
}

// fieldWithin reports whether field is outer or lies inside it.
func fieldWithin(field, outer string) bool {
	return field == outer || strings.HasPrefix(field, outer+".") || strings.HasPrefix(field, outer+"[")
}

func childFieldPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

type configDecoder struct {
	source string
	lines  map[string]int
	errs   []error
}

// configKey decodes the value of one known key; field is its dotted path.
type configKey struct {
	name   string
	decode func(n *yaml.Node, field string)
}

func (d *configDecoder) errorf(n *yaml.Node, field, format string, args ...any) {
	d.errs = append(d.errs, &ConfigError{
		Source: d.source, Line: n.Line, Field: field, Problem: fmt.Sprintf(format, args...),
	})
}

// config decodes the document's root node into c, over c's defaults.
func (d *configDecoder) config(root *yaml.Node, c *Config) {
	d.mapping(root, "", append([]configKey{
		{"listen", d.str(&c.Listen)},
		{"runtime_dir", d.str(&c.RuntimeDir)},
		{"control_group", d.str(&c.ControlGroup)},
		{"onnxruntime_library", d.str(&c.ONNXRuntimeLibrary)},
		{"cuda", func(n *yaml.Node, field string) {
			d.mapping(n, field, []configKey{{"library_dirs", d.strs(&c.CUDA.LibraryDirs)}})
		}},
		{"log_level", d.str(&c.LogLevel)},
		{"max_body_bytes", d.byteSize(&c.MaxBodyBytes)},
		{"shutdown_timeout", d.duration(&c.ShutdownTimeout)},
		{"drain_grace", d.duration(&c.DrainGrace)},
		{"boot_timeout", d.duration(&c.BootTimeout)},
		{"strict_readiness", d.boolean(&c.StrictReadiness)},
		{"model_control", d.str(&c.ModelControl)},
		{"startup_models", d.strs(&c.StartupModels)},
		{"models", func(n *yaml.Node, field string) { d.models(n, field, c) }},
		{"prep", func(n *yaml.Node, field string) {
			d.mapping(n, field, append([]configKey{
				{"workers", d.integer(&c.Prep.Workers)},
				{"min_workers", d.integer(&c.Prep.MinWorkers)},
				{"max_workers", d.integer(&c.Prep.MaxWorkers)},
				{"autoscale", func(n *yaml.Node, field string) { d.mapping(n, field, d.fieldKeys(&c.Prep.Autoscale)) }},
				{"upstream_timeout", d.duration(&c.Prep.UpstreamTimeout)},
				{"handoff", d.str(&c.Prep.Handoff)},
				{"arena_slots", d.integer(&c.Prep.ArenaSlots)},
				{"arena_slot_bytes", d.byteSize(&c.Prep.ArenaSlotBytes)},
				{"max_decode_bytes", d.byteSize(&c.Prep.MaxDecodeBytes)},
			}, append(d.recycleKeys(&c.Prep.Recycle), d.poolPlacementKeys(&c.Prep.CPUs, &c.Prep.CPUsPerWorker)...)...))
		}},
		{"infer", func(n *yaml.Node, field string) {
			d.mapping(n, field, append([]configKey{
				{"workers", d.integer(&c.Infer.Workers)},
				{"intra_op_threads", d.integer(&c.Infer.IntraOpThreads)},
				{"max_run_time", d.duration(&c.Infer.MaxRunTime)},
			}, append(append(d.recycleKeys(&c.Infer.Recycle), configKey{"gpus", d.gpuSelection(&c.Infer.GPUs)},
				configKey{"providers", func(n *yaml.Node, field string) { d.mapping(n, field, d.fieldKeys(&c.Infer.Providers)) }},
				configKey{"output_binding", d.str(&c.Infer.OutputBinding)}),
				d.poolPlacementKeys(&c.Infer.CPUs, &c.Infer.CPUsPerWorker)...)...))
		}},
		{"workers", func(n *yaml.Node, field string) {
			d.mapping(n, field, d.fieldKeys(&c.Workers))
		}},
		{"limits", d.limits(&c.Limits)},
		{"auth", d.auth(&c.Auth)},
		{"placement", func(n *yaml.Node, field string) { d.mapping(n, field, d.placementKeys(&c.Placement)) }},
	}, append(d.metricsKeys(c), d.grpcKeys(c), d.tlsKeys(c), d.tracingKeys(c))...))
}

// recycleKeys are the recycling keys every pool section has.
func (d *configDecoder) recycleKeys(r *Recycle) []configKey {
	return d.fieldKeys(r)
}

// models replaces the default model list with the one in the file.
func (d *configDecoder) models(n *yaml.Node, field string, c *Config) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, field, "want a list of models (- name: NAME, path: FILE.onnx), got %s", yamlKindName(n))
		return
	}
	c.Models = make([]ModelConfig, len(n.Content))
	for i, item := range n.Content {
		m := &c.Models[i]
		itemField := fmt.Sprintf("%s[%d]", field, i)
		item = yamlDeref(item)
		d.lines[itemField] = item.Line
		if yamlIsNull(item) {
			continue // reported by validation as a model without name and path
		}
		d.mapping(item, itemField, []configKey{
			{"name", d.str(&m.Name)},
			{"path", d.str(&m.Path)},
			{"versions", d.versions(&m.Versions)},
			{"version_policy", d.versionPolicy(&m.VersionPolicy)},
			{"batching", d.batching(&m.Batching)},
			{"preprocess", d.preprocess(&m.Preprocess)},
			{"postprocess", d.postprocess(&m.Postprocess)},
			{"providers", d.modelProviders(&m.Providers)},
			{"output_binding", d.str(&m.OutputBinding)},
			{"warmup", d.str(&m.Warmup)},
			{"response_cache", d.responseCache(&m.ResponseCache)},
			{"max_run_time", d.duration(&m.MaxRunTime)},
		})
	}
}

// mapping decodes the known keys of a mapping node and reports unknown and
// repeated keys. A key with no value keeps its default.
func (d *configDecoder) mapping(n *yaml.Node, field string, keys []configKey) {
	n = yamlDeref(n)
	if yamlIsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		what := "want a mapping"
		if field == "" {
			what = "the config must be a mapping"
		}
		d.errorf(n, field, "%s with the keys %s, got %s", what, keyNames(keys), yamlKindName(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := yamlDeref(n.Content[i]), yamlDeref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, field, "a key must be a plain name, got %s", yamlKindName(k))
			continue
		}
		child := childFieldPath(field, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.errorf(k, child, "set twice, first at line %d (keep one)", first)
			continue
		}
		seen[k.Value] = k.Line
		dec := findKey(keys, k.Value)
		if dec == nil {
			in := ""
			if field != "" {
				in = " in " + field
			}
			d.errorf(k, "", "unknown key %q%s (known keys: %s)", k.Value, in, keyNames(keys))
			continue
		}
		// A missing key inside a section is reported at the section's key,
		// a bad scalar at the scalar itself.
		d.lines[child] = k.Line
		if v.Kind == yaml.ScalarNode {
			d.lines[child] = v.Line
		}
		if !yamlIsNull(v) {
			dec(v, child)
		}
	}
}

func findKey(keys []configKey, name string) func(*yaml.Node, string) {
	for _, k := range keys {
		if k.name == name {
			return k.decode
		}
	}
	return nil
}

func keyNames(keys []configKey) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}

func (d *configDecoder) scalar(n *yaml.Node, field, want string) bool {
	if n.Kind == yaml.ScalarNode {
		return true
	}
	d.errorf(n, field, "want %s, got %s", want, yamlKindName(n))
	return false
}

func (d *configDecoder) str(dst *string) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		if d.scalar(n, field, "a string") {
			*dst = n.Value
		}
	}
}

func (d *configDecoder) integer(dst *int) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		if !d.scalar(n, field, "a whole number") {
			return
		}
		if n.ShortTag() != "!!int" {
			d.errorf(n, field, "%q is not a whole number", n.Value)
			return
		}
		var v int
		if err := n.Decode(&v); err != nil {
			d.errorf(n, field, "%q is too large", n.Value)
			return
		}
		*dst = v
	}
}

// boolean decodes true or false.
func (d *configDecoder) boolean(dst *bool) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		if !d.scalar(n, field, "true or false") {
			return
		}
		if n.ShortTag() != "!!bool" || n.Decode(dst) != nil {
			d.errorf(n, field, "%q is not true or false", n.Value)
		}
	}
}

func (d *configDecoder) duration(dst *Duration) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		if !d.scalar(n, field, "a duration such as 30s") {
			return
		}
		v, err := parseDuration(n.Value)
		if err != nil {
			d.errorf(n, field, "%v", err)
			return
		}
		*dst = v
	}
}

func (d *configDecoder) byteSize(dst *ByteSize) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		v, err := byteSizeFromNode(n)
		if err != nil {
			d.errorf(n, field, "%v", err)
			return
		}
		*dst = v
	}
}

// yamlDeref follows a YAML alias (*name) to the node it names.
func yamlDeref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func yamlIsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

var yamlLineError = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns the YAML library's "yaml: line 3: ..." into the same
// "source:3: ..." form as every other config error.
func syntaxError(source string, err error) error {
	msg := err.Error()
	line := 0
	if m := yamlLineError.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return &ConfigError{Source: source, Line: line, Problem: "invalid YAML: " + msg}
}
