package config

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// BatchingConfig is one model's dynamic batcher in each infer worker, with
// Triton's dynamic_batching semantics: requests for the model queue, and
// compatible ones (equal datatypes and non-batch dimensions) are
// concatenated along dimension 0 into one run, whose outputs are split back.
// Whether a model can batch depends on the model file (every input and
// output needs a dynamic dimension 0); the infer worker checks that when it
// loads the model and refuses to start otherwise.
type BatchingConfig struct {
	// MaxBatchSize is the most rows one run may carry. 0 means the model
	// does not batch: requests run one by one with their shapes as given,
	// as fixed-shape models need, still under the queue bound.
	MaxBatchSize int `yaml:"max_batch_size"`
	// MaxQueueDelay is how long the oldest queued request may wait for
	// company before a partial batch runs; 0 runs whatever is queued as
	// soon as an instance is free (batches then form only under load).
	MaxQueueDelay Duration `yaml:"max_queue_delay"`
	// PreferredBatchSizes run as soon as the queue can form one, without
	// waiting for MaxQueueDelay; the largest wins. Each is in
	// [1, MaxBatchSize].
	PreferredBatchSizes []int `yaml:"preferred_batch_sizes,flow"`
	// MaxQueueSize bounds the requests (not rows) waiting per infer worker;
	// beyond it a request gets 503 with Retry-After at once, so that
	// overload never turns into unbounded memory or latency.
	MaxQueueSize int `yaml:"max_queue_size"`
	// Instances is how many batches of the model one infer worker runs at
	// once (Triton's instance_group count).
	Instances int `yaml:"instances"`
}

// Limits on batching values; they catch typos before a worker allocates
// for them.
const (
	maxBatchSize    = 1 << 16
	maxQueueSize    = 1 << 20
	maxInstances    = 64
	defaultQueueLen = 1024
)

// DefaultBatching returns the batching a model has when its batching
// section is absent: no batching, a queue of 1024, one instance.
func DefaultBatching() *BatchingConfig {
	return &BatchingConfig{MaxQueueSize: defaultQueueLen, Instances: 1}
}

// batching decodes a model's batching section over DefaultBatching.
func (d *configDecoder) batching(dst **BatchingConfig) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		b := DefaultBatching()
		*dst = b
		d.mapping(n, field, d.fieldKeys(b))
	}
}

// integers decodes a list of whole numbers; the empty list leaves nil.
func (d *configDecoder) integers(dst *[]int) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, field, "want a list of whole numbers such as [4, 8], got %s", yamlKindName(n))
			return
		}
		var vs []int
		for i, item := range n.Content {
			var v int
			d.integer(&v)(yamlDeref(item), fmt.Sprintf("%s[%d]", field, i))
			vs = append(vs, v)
		}
		*dst = vs
	}
}

// batching validates one model's batching section; field is its path,
// such as "models[1].batching". A nil section is the default, always valid.
func (v *configValidator) batching(field string, b *BatchingConfig) {
	if b == nil {
		return
	}
	if b.MaxBatchSize < 0 || b.MaxBatchSize > maxBatchSize {
		v.errorf(field+".max_batch_size", "%d is out of range (use 0 to turn batching off, or 1 to %d)", b.MaxBatchSize, maxBatchSize)
	}
	if b.MaxQueueDelay.Duration < 0 {
		v.errorf(field+".max_queue_delay", "%s is negative (use 0 to run partial batches at once, or e.g. 2ms)", b.MaxQueueDelay)
	}
	v.preferredSizes(field+".preferred_batch_sizes", b)
	if b.MaxQueueSize < 1 || b.MaxQueueSize > maxQueueSize {
		v.errorf(field+".max_queue_size", "%d is out of range (use 1 to %d, e.g. %d)", b.MaxQueueSize, maxQueueSize, defaultQueueLen)
	}
	if b.Instances < 1 || b.Instances > maxInstances {
		v.errorf(field+".instances", "%d is out of range (use 1 to %d)", b.Instances, maxInstances)
	}
}

func (v *configValidator) preferredSizes(field string, b *BatchingConfig) {
	if len(b.PreferredBatchSizes) > 0 && b.MaxBatchSize == 0 {
		v.errorf(field, "needs batching on: set max_batch_size, or remove preferred_batch_sizes")
		return
	}
	// A set, not a search of the sizes before each: the list may be as
	// long as max_batch_size (65,536), 1.8 s to check quadratically.
	seen := make(map[int]bool, len(b.PreferredBatchSizes))
	bad := 0
	for i, n := range b.PreferredBatchSizes {
		var problem string
		switch {
		case n < 1 || n > b.MaxBatchSize:
			problem = fmt.Sprintf("%d is outside [1, max_batch_size %d]", n, b.MaxBatchSize)
		case seen[n]:
			problem = fmt.Sprintf("%d is listed twice (list each size once)", n)
		default:
			seen[n] = true
			continue
		}
		if bad++; bad <= maxListedSizes {
			v.errorf(fmt.Sprintf("%s[%d]", field, i), "%s", problem)
		}
	}
	if bad > maxListedSizes {
		v.errorf(field, "%d more sizes are outside [1, max_batch_size %d] or listed twice", bad-maxListedSizes, b.MaxBatchSize)
	}
}

// maxListedSizes bounds the preferred sizes an error names one by one:
// a repository load's override (64 KiB) could otherwise list 30,000 bad
// sizes and get back a 2 MB error.
const maxListedSizes = 8
