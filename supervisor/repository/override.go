package repository

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// A repository load may carry a config override, as Triton's does:
// {"parameters": {"config": "<model config JSON>"}}, in Triton's model
// config shape. It may set what the batcher does, and nothing else:
//
//	name                                        must be the model's own
//	max_batch_size                              batching.max_batch_size
//	dynamic_batching.preferred_batch_size       batching.preferred_batch_sizes
//	dynamic_batching.max_queue_delay_microseconds batching.max_queue_delay
//	dynamic_batching.default_queue_policy.max_queue_size batching.max_queue_size
//	instance_group[0].count                     batching.instances
//
// Everything else is refused with 400 naming it: the model file (path,
// platform, inputs and outputs are the file's), preprocessing, warm-up
// and placement (instance_group kind and gpus: the host's plan decides)
// come from the config file only, so that an API client can tune a model
// but never point the server at a file or a device.

// errOverride is a config override the repository API refuses (400).
var errOverride = errors.New("the config override is refused")

// overrideModel returns mc with the override js applied over its batching.
func overrideModel(mc config.ModelConfig, js string) (config.ModelConfig, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &top); err != nil || top == nil {
		return mc, fmt.Errorf("%w: parameters.config must be a JSON object in Triton's model config shape (%v)", errOverride, err)
	}
	b := config.DefaultBatching()
	if mc.Batching != nil {
		c := *mc.Batching
		c.PreferredBatchSizes = slices.Clone(c.PreferredBatchSizes)
		b = &c
	}
	o := overrider{b: b}
	for key, raw := range top {
		switch key {
		case "name":
			var name string
			if json.Unmarshal(raw, &name) != nil || name != mc.Name {
				o.bad = append(o.bad, fmt.Sprintf("name must be %q, the model loaded", mc.Name))
			}
		case "max_batch_size":
			o.integer(key, raw, &b.MaxBatchSize)
		case "dynamic_batching":
			o.dynamicBatching(raw)
		case "instance_group":
			o.instanceGroup(raw)
		default:
			o.refused = append(o.refused, key)
		}
	}
	if err := o.err(mc.Name); err != nil {
		return mc, err
	}
	if err := config.CheckBatching("batching", b); err != nil {
		return mc, fmt.Errorf("%w: the batching it makes is invalid: %w", errOverride, err)
	}
	mc.Batching = b
	return mc, nil
}

// overrider collects what an override sets, refuses and gets wrong.
type overrider struct {
	b       *config.BatchingConfig
	refused []string // fields an override may not set
	bad     []string // fields with a value of the wrong shape
}

func (o *overrider) err(model string) error {
	if len(o.refused) > 0 {
		sort.Strings(o.refused)
		return fmt.Errorf("%w: it may set only name, max_batch_size, dynamic_batching (preferred_batch_size, max_queue_delay_microseconds, default_queue_policy.max_queue_size) and instance_group[0].count; it sets %s, which for %q come from the config file only",
			errOverride, strings.Join(o.refused, ", "), model)
	}
	if len(o.bad) > 0 {
		sort.Strings(o.bad)
		return fmt.Errorf("%w: %s", errOverride, strings.Join(o.bad, "; "))
	}
	return nil
}

func (o *overrider) integer(field string, raw json.RawMessage, dst *int) {
	if json.Unmarshal(raw, dst) != nil {
		o.bad = append(o.bad, field+" must be a whole number")
	}
}

func (o *overrider) dynamicBatching(raw json.RawMessage) {
	var db map[string]json.RawMessage
	if json.Unmarshal(raw, &db) != nil {
		o.bad = append(o.bad, "dynamic_batching must be an object")
		return
	}
	for key, v := range db {
		field := "dynamic_batching." + key
		switch key {
		case "preferred_batch_size":
			if json.Unmarshal(v, &o.b.PreferredBatchSizes) != nil {
				o.bad = append(o.bad, field+" must be a list of whole numbers")
			}
		case "max_queue_delay_microseconds":
			var us int64
			if json.Unmarshal(v, &us) != nil || us < 0 || us > int64(time.Hour/time.Microsecond) {
				o.bad = append(o.bad, field+" must be a whole number of microseconds, 0 to 3600000000")
			}
			o.b.MaxQueueDelay = config.Duration{Duration: time.Duration(us) * time.Microsecond}
		case "default_queue_policy":
			o.queuePolicy(v)
		default:
			o.refused = append(o.refused, field)
		}
	}
}

func (o *overrider) queuePolicy(raw json.RawMessage) {
	var qp map[string]json.RawMessage
	if json.Unmarshal(raw, &qp) != nil {
		o.bad = append(o.bad, "dynamic_batching.default_queue_policy must be an object")
		return
	}
	for key, v := range qp {
		if key != "max_queue_size" {
			o.refused = append(o.refused, "dynamic_batching.default_queue_policy."+key)
			continue
		}
		o.integer("dynamic_batching.default_queue_policy.max_queue_size", v, &o.b.MaxQueueSize)
	}
}

func (o *overrider) instanceGroup(raw json.RawMessage) {
	var groups []map[string]json.RawMessage
	if json.Unmarshal(raw, &groups) != nil || len(groups) != 1 {
		o.bad = append(o.bad, "instance_group must be a list of one group (each infer worker runs count instances)")
		return
	}
	for key, v := range groups[0] {
		if key != "count" {
			o.refused = append(o.refused, "instance_group[0]."+key)
			continue
		}
		o.integer("instance_group[0].count", v, &o.b.Instances)
	}
}
