package repository

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

func TestOverrideModel(t *testing.T) {
	mc := config.ModelConfig{Name: "m", Path: "m.onnx", Warmup: "none",
		Batching: &config.BatchingConfig{MaxBatchSize: 4, MaxQueueSize: 10, Instances: 1}}
	got, err := overrideModel(mc, `{"name":"m","max_batch_size":8,"dynamic_batching":{"preferred_batch_size":[4,8],
		"max_queue_delay_microseconds":500,"default_queue_policy":{"max_queue_size":7}},"instance_group":[{"count":2}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := config.BatchingConfig{MaxBatchSize: 8, PreferredBatchSizes: []int{4, 8}, MaxQueueDelay: config.Duration{Duration: 500 * time.Microsecond}, MaxQueueSize: 7, Instances: 2}
	if !reflect.DeepEqual(*got.Batching, want) || got.Path != "m.onnx" || got.Warmup != "none" {
		t.Errorf("override = %+v (batching %+v), want batching %+v and the rest of the file's", got, *got.Batching, want)
	}
	if mc.Batching.MaxBatchSize != 4 {
		t.Error("the override changed the file's model config")
	}
	for js, says := range map[string]string{
		`{"platform":"x","input":[],"instance_group":[{"count":1,"kind":"KIND_GPU"}]}`: "it sets input, instance_group[0].kind, platform",
		`{"dynamic_batching":{"priority_levels":2}}`:                                   "dynamic_batching.priority_levels",
		`{"name":"other"}`:       `name must be "m"`,
		`{"max_batch_size":"8"}`: "max_batch_size must be a whole number",
		`{"max_batch_size":0,"dynamic_batching":{"preferred_batch_size":[2]}}`: "preferred_batch_sizes",
		`[1]`: "must be a JSON object",
	} {
		_, err := overrideModel(mc, js)
		if !errors.Is(err, errOverride) || !strings.Contains(err.Error(), says) {
			t.Errorf("override %s: %v, want errOverride saying %q", js, err, says)
		}
	}
}

// TestOverrideErrorStaysSmall: a load's override that fills its 64 KiB
// body with bad preferred sizes gets an error of a few lines, not one
// line per size (2 MB before).
func TestOverrideErrorStaysSmall(t *testing.T) {
	mc := config.ModelConfig{Name: "m", Batching: &config.BatchingConfig{MaxBatchSize: 4, MaxQueueSize: 10, Instances: 1}}
	js := `{"dynamic_batching":{"preferred_batch_size":[` + strings.Repeat("0,", 30000) + `0]}}`
	_, err := overrideModel(mc, js)
	if !errors.Is(err, errOverride) || len(err.Error()) > 2000 || !strings.Contains(err.Error(), "29993 more sizes") {
		t.Errorf("override with 30001 bad sizes (%d bytes): error of %d bytes, want errOverride of at most 2000 saying 29993 more sizes",
			len(js), len(fmt.Sprint(err)))
	}
}

func modelNames(c *config.Config) []string {
	var names []string
	for _, mc := range c.Models {
		names = append(names, mc.Name)
	}
	return names
}

func fileWith(explicit bool, startup []string, names ...string) *config.Config {
	c := config.DefaultConfig()
	c.Models = nil
	for _, n := range names {
		c.Models = append(c.Models, config.ModelConfig{Name: n, Path: n + ".onnx"})
	}
	if explicit {
		c.ModelControl = config.ModelControlExplicit
	}
	c.StartupModels = startup
	return c
}

// reloadRepo plans file as a reload does and commits it.
func reloadRepo(r *API, file *config.Config) *config.Config {
	eff := r.Plan(file)
	r.Commit(eff)
	return eff
}

// TestRepositoryStateOverReloads: the rules docs/models.md states for the API
// state across reloads: kept for models still in the file, dropped for
// models gone, startup_models for models new to the file, all of it
// dropped when model_control turns none.
func TestRepositoryStateOverReloads(t *testing.T) {
	var r API
	eff := r.Start(fileWith(true, []string{"a", "b"}, "a", "b", "c"))
	if got := modelNames(eff); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("start with startup_models [a b] serves %v", got)
	}
	if r.Describe()["c"] != reasonNotStarted {
		t.Errorf("c's state %q, want %q", r.Describe()["c"], reasonNotStarted)
	}
	o := config.ModelConfig{Name: "c", Batching: &config.BatchingConfig{MaxBatchSize: 2, MaxQueueSize: 1, Instances: 1}}
	_, _, seq1 := r.set("c", modelChange{override: &o})
	_, _, seq2 := r.set("a", modelChange{unloaded: true, reason: reasonUnloaded})
	if r.inForce(seq1) {
		t.Error("a change is in force before a reload stored it")
	}
	eff = reloadRepo(&r, fileWith(true, []string{"a", "b"}, "a", "b", "c", "d", "e"))
	if got := modelNames(eff); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Errorf("after unload a, load c, new d and e not in startup_models: serves %v, want [b c]", got)
	}
	if !r.inForce(seq2) || eff.Models[1].Batching.MaxBatchSize != 2 || eff.Models[1].Path != "c.onnx" {
		t.Errorf("c served as %+v, want the override over the file's path", eff.Models[1])
	}
	// a leaves the file: its state goes; it comes back as new, startup_models says.
	reloadRepo(&r, fileWith(true, []string{"a", "b"}, "b", "c"))
	eff = reloadRepo(&r, fileWith(true, []string{"a", "b"}, "a", "b", "c"))
	if got := modelNames(eff); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("a removed then re-added: serves %v, want [a b c]", got)
	}
	eff = reloadRepo(&r, fileWith(false, nil, "a", "b", "c", "d"))
	if got := modelNames(eff); !reflect.DeepEqual(got, []string{"a", "b", "c", "d"}) || r.Describe() != nil {
		t.Errorf("model_control none: serves %v with API state %v, want every model and none", got, r.Describe())
	}
}

func TestParseRepositoryRoute(t *testing.T) {
	for path, want := range map[string]repositoryRoute{
		"/v2/repository/index":           {action: "index"},
		"/v2/repository/models/m/load":   {model: "m", action: "load"},
		"/v2/repository/models/m/unload": {model: "m", action: "unload"},
		"/v2/repository/models//load":    {},
		"/v2/repository/models/m/reload": {},
		"/v2/repository/models/m":        {},
		"/v2/repository/models/m/load/x": {},
		"/v2/repository/indexx":          {},
	} {
		got, ok := parseRepositoryRoute(path)
		if ok != (want.action != "") || got != want {
			t.Errorf("parseRepositoryRoute(%q) = %+v, %t; want %+v", path, got, ok, want)
		}
	}
}
