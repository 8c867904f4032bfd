package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/supervisor-dev/supervisor/internal/v2"
)

// Model versions (Triton's model versions and version_policy). A model
// lists its versions, each its own file, instead of one path:
//
//	- name: mlp
//	  versions:
//	    - {version: 1, path: /srv/models/mlp/1/model.onnx}
//	    - {version: 2, path: /srv/models/mlp/2/model.onnx}
//	  version_policy: {latest: {num_versions: 2}}
//
// and version_policy picks the versions served, as Triton's does:
// {latest: {num_versions: N}} (the N highest; latest 1 when absent),
// {all: {}} or {specific: {versions: [1, 3]}}.
//
// Each version served is its own model to everything past the routes:
// ParseConfig replaces the model by one entry per version served, named
// "mlp@2" (v2.ServedName) with that version's file and the model's other
// settings. The workers load, warm up, batch, cache and count each one on
// its own, the quarantine and the response cache key it by that name, and
// only the routes (v2.Route.PickServed) and the answers (v2.SplitServedName)
// know the model's name and version apart. That is the whole design: no
// worker, pool or key had to learn of versions.

// ModelVersion is one version of a model: its number and file.
type ModelVersion struct {
	// Version is the version's number in URLs (/versions/{v}), at least 1.
	Version int `yaml:"version"`
	// Path is the version's .onnx file, resolved as ModelConfig.Path.
	Path string `yaml:"path"`
}

// VersionPolicy picks the versions of a model that are served; exactly one
// of its fields is set. The zero value (and nil) is latest 1, Triton's
// default.
type VersionPolicy struct {
	// Latest serves the NumVersions highest versions.
	Latest *LatestVersions `yaml:"latest,omitempty"`
	// All serves every version.
	All *struct{} `yaml:"all,omitempty"`
	// Specific serves the versions listed.
	Specific *SpecificVersions `yaml:"specific,omitempty"`
}

// LatestVersions is version_policy latest.
type LatestVersions struct {
	NumVersions int `yaml:"num_versions"`
}

// SpecificVersions is version_policy specific.
type SpecificVersions struct {
	Versions []int `yaml:"versions,flow"`
}

// versions decodes a model's versions list.
func (d *configDecoder) versions(dst *[]ModelVersion) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, field, "want a list of versions (- {version: 1, path: FILE.onnx}), got %s", yamlKindName(n))
			return
		}
		*dst = make([]ModelVersion, len(n.Content))
		for i, item := range n.Content {
			v := &(*dst)[i]
			itemField := fmt.Sprintf("%s[%d]", field, i)
			item = yamlDeref(item)
			d.lines[itemField] = item.Line
			d.mapping(item, itemField, []configKey{
				{"version", d.integer(&v.Version)},
				{"path", d.str(&v.Path)},
			})
		}
	}
}

// versionPolicy decodes version_policy.
func (d *configDecoder) versionPolicy(dst **VersionPolicy) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		p := &VersionPolicy{}
		*dst = p
		d.mapping(n, field, []configKey{
			{"latest", func(n *yaml.Node, field string) {
				p.Latest = &LatestVersions{}
				d.mapping(n, field, []configKey{{"num_versions", d.integer(&p.Latest.NumVersions)}})
			}},
			{"all", func(n *yaml.Node, field string) {
				p.All = &struct{}{}
				d.mapping(n, field, nil)
			}},
			{"specific", func(n *yaml.Node, field string) {
				p.Specific = &SpecificVersions{}
				d.mapping(n, field, []configKey{{"versions", d.integers(&p.Specific.Versions)}})
			}},
		})
	}
}

// modelVersions checks the versions and version_policy of the model at
// field (models[i]).
func (v *configValidator) modelVersions(field string, m ModelConfig) {
	if len(m.Versions) == 0 {
		if m.VersionPolicy != nil {
			v.errorf(field+".version_policy", "is set but the model has no versions list (list its files under versions:, or remove version_policy)")
		}
		return
	}
	if m.Path != "" {
		v.errorf(field+".path", "is set with versions (a model has one path, or a versions list of {version, path}: keep one)")
	}
	first := map[int]int{}
	for i, mv := range m.Versions {
		vf := fmt.Sprintf("%s.versions[%d]", field, i)
		if mv.Version < 1 {
			v.errorf(vf+".version", "%d is not a version (versions are whole numbers from 1, as Triton's directories are)", mv.Version)
		} else if j, dup := first[mv.Version]; dup {
			v.errorf(vf+".version", "version %d is listed twice, first at line %d (list each version once)", mv.Version, v.origin.line(fmt.Sprintf("%s.versions[%d]", field, j)))
		} else {
			first[mv.Version] = i
		}
		if mv.Path == "" {
			v.errorf(vf+".path", "version %d has no path (give the path of its .onnx file)", mv.Version)
		}
	}
	p := m.VersionPolicy
	if p == nil {
		return
	}
	pf := field + ".version_policy"
	set := 0
	for _, on := range []bool{p.Latest != nil, p.All != nil, p.Specific != nil} {
		if on {
			set++
		}
	}
	switch {
	case set != 1:
		v.errorf(pf, "set exactly one of latest: {num_versions: N}, all: {} or specific: {versions: [...]} (Triton's version_policy)")
	case p.Latest != nil && p.Latest.NumVersions < 1:
		v.errorf(pf+".latest.num_versions", "%d: serve at least 1 version", p.Latest.NumVersions)
	case p.Specific != nil && len(p.Specific.Versions) == 0:
		v.errorf(pf+".specific.versions", "is empty: list the versions to serve")
	case p.Specific != nil:
		for i, want := range p.Specific.Versions {
			if _, ok := first[want]; !ok {
				v.errorf(fmt.Sprintf("%s.specific.versions[%d]", pf, i), "version %d is not in the model's versions list (it has %s)", want, versionList(m.Versions))
			}
		}
	}
}

func versionList(vs []ModelVersion) string {
	s := make([]string, len(vs))
	for i, mv := range vs {
		s[i] = strconv.Itoa(mv.Version)
	}
	return strings.Join(s, ", ")
}

// ServedVersions are the versions of m its version_policy serves, lowest
// first; nil for a model of one path.
func (m ModelConfig) ServedVersions() []ModelVersion {
	if len(m.Versions) == 0 {
		return nil
	}
	vs := slices.Clone(m.Versions)
	slices.SortFunc(vs, func(a, b ModelVersion) int { return a.Version - b.Version })
	p := m.VersionPolicy
	switch {
	case p == nil || p.Latest != nil:
		n := 1
		if p != nil {
			n = p.Latest.NumVersions
		}
		return vs[max(0, len(vs)-n):]
	case p.Specific != nil:
		return slices.DeleteFunc(vs, func(mv ModelVersion) bool { return !slices.Contains(p.Specific.Versions, mv.Version) })
	}
	return vs // all
}

// expandVersions replaces every model with a versions list by one model
// per version served (ServedVersions), named v2.ServedName(name, version),
// with that version's path; the lines of its fields are the model's, its
// path's the version's. Run once, after validation.
func (c *Config) expandVersions() {
	var out []ModelConfig
	from := map[int]int{} // new index -> old index
	pathField := map[int]string{}
	for i, m := range c.Models {
		served := m.ServedVersions()
		if served == nil {
			from[len(out)] = i
			out = append(out, m)
			continue
		}
		for _, mv := range served {
			e := m
			e.Name, e.Path = v2.ServedName(m.Name, strconv.Itoa(mv.Version)), mv.Path
			e.Versions, e.VersionPolicy = nil, nil
			for k, ov := range m.Versions {
				if ov.Version == mv.Version {
					pathField[len(out)] = fmt.Sprintf("models[%d].versions[%d].path", i, k)
				}
			}
			from[len(out)] = i
			out = append(out, e)
		}
	}
	if len(out) == len(c.Models) && len(pathField) == 0 {
		return
	}
	c.versioned = map[string]writtenVersions{}
	for _, m := range c.Models {
		if len(m.Versions) > 0 {
			c.versioned[m.Name] = writtenVersions{m.Versions, m.VersionPolicy}
		}
	}
	lines := c.origin.lines
	if lines != nil {
		moved := map[string]int{}
		for k, l := range lines {
			if !strings.HasPrefix(k, "models[") {
				moved[k] = l
			}
		}
		for j, i := range from {
			old := fmt.Sprintf("models[%d]", i)
			for k, l := range lines {
				if rest, ok := strings.CutPrefix(k, old); ok && (rest == "" || rest[0] == '.') {
					moved[fmt.Sprintf("models[%d]", j)+rest] = l
				}
			}
			if pf, ok := pathField[j]; ok {
				moved[fmt.Sprintf("models[%d].path", j)] = lines[pf]
			}
		}
		if l, ok := lines["models"]; ok {
			moved["models"] = l
		}
		c.origin.lines = moved
	}
	c.Models = out
}

// ServedNames are the served names (v2.ServedName) of the model called
// name, as c serves it: [name] for a model of one file, name@v for each
// version served; nil for a model c does not serve.
func (c *Config) ServedNames(name string) []string {
	var out []string
	for _, mc := range c.Models {
		if model, _ := v2.SplitServedName(mc.Name); model == name {
			out = append(out, mc.Name)
		}
	}
	return out
}

// HasVersions reports whether a model of c lists versions.
func (c *Config) HasVersions() bool { return len(c.versioned) > 0 }

// ModelNames are the names of the models c serves, each once (a model's
// versions under its one name), in c's order.
func (c *Config) ModelNames() []string {
	seen := map[string]bool{}
	var out []string
	for _, mc := range c.Models {
		if model, _ := v2.SplitServedName(mc.Name); !seen[model] {
			seen[model] = true
			out = append(out, model)
		}
	}
	return out
}

// writtenVersions are a model's versions and version_policy as written.
type writtenVersions struct {
	versions []ModelVersion
	policy   *VersionPolicy
}

// asWritten is c with each model that lists versions written back as one
// model with its versions list and policy (the settings of its first
// version served), so that YAML writes a config ParseConfig reads back.
func (c *Config) asWritten() *Config {
	if len(c.versioned) == 0 {
		return c
	}
	out := *c
	out.Models = nil
	done := map[string]bool{}
	for _, m := range c.Models {
		name, _ := v2.SplitServedName(m.Name)
		w, ok := c.versioned[name]
		switch {
		case !ok || !v2.IsVersioned(m.Name):
			out.Models = append(out.Models, m)
		case !done[name]:
			done[name] = true
			m.Name, m.Path, m.Versions, m.VersionPolicy = name, "", w.versions, w.policy
			out.Models = append(out.Models, m)
		}
	}
	return &out
}
