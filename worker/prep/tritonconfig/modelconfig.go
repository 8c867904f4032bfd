package tritonconfig

import (
	"slices"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

// Triton's model configuration extension: GET /v2/models/{m}/config
// answers the model's ModelConfig (Triton's model_config.proto) as JSON,
// the way Triton writes it: proto field names, enums by name, 64-bit
// integers as numbers, and the fields this server has an equivalent for
// always present. It is built from what the infer workers serving the
// model report (its metadata, and worker.Serving: the batcher settings
// and where each runs it) and the prep worker's upstream timeout, so it
// describes the model as it serves now, not as a config file says.
//
// How our settings map onto Triton's:
//
//   - max_batch_size: batching.max_batch_size; with it > 0, dims leave
//     out the batch dimension (dimension 0), as Triton's do.
//   - dims: the model's, -1 for a dynamic dimension; an image model's
//     input is the BYTES (TYPE_STRING) tensor of encoded images clients send.
//   - dynamic_batching (only when max_batch_size > 0, as in Triton):
//     preferred_batch_size, max_queue_delay_microseconds;
//     default_queue_policy: max_queue_size (batching.max_queue_size),
//     timeout_action REJECT (a request that waited too long gets 503),
//     default_timeout_microseconds = prep.upstream_timeout (the longest a
//     request without a "timeout" parameter may wait), and
//     allow_timeout_override true (a request's "timeout" may shorten it).
//     priority_levels is 0: priorities are honoured (1 first, unset last)
//     with no configured number of levels, which Triton's fields cannot
//     say.
//   - instance_group: one group per kind; count is batching.instances
//     (batches in flight at once per infer worker); KIND_GPU lists the
//     GPUs of the infer workers serving the model (count is per GPU, as in
//     Triton); KIND_CPU counts instances over the CPU infer workers.

// ModelConfig is Triton's ModelConfig, the fields we fill.
type ModelConfig struct {
	Name                 string           `json:"name"`
	Platform             string           `json:"platform"`
	Backend              string           `json:"backend"`
	VersionPolicy        versionPolicy    `json:"version_policy"`
	MaxBatchSize         int              `json:"max_batch_size"`
	Input                []configInput    `json:"input"`
	Output               []configOutput   `json:"output"`
	DynamicBatching      *dynamicBatching `json:"dynamic_batching,omitempty"`
	InstanceGroup        []instanceGroup  `json:"instance_group"`
	DefaultModelFilename string           `json:"default_model_filename"`
}

type versionPolicy struct {
	Latest struct {
		NumVersions int `json:"num_versions"`
	} `json:"latest"`
}

type configInput struct {
	Name          string   `json:"name"`
	DataType      string   `json:"data_type"`
	Format        string   `json:"format"`
	Dims          []int64  `json:"dims"`
	Reshape       *reshape `json:"reshape,omitempty"`
	IsShapeTensor bool     `json:"is_shape_tensor"`
	Optional      bool     `json:"optional"`
}

type configOutput struct {
	Name          string   `json:"name"`
	DataType      string   `json:"data_type"`
	Dims          []int64  `json:"dims"`
	Reshape       *reshape `json:"reshape,omitempty"`
	LabelFilename string   `json:"label_filename"`
	IsShapeTensor bool     `json:"is_shape_tensor"`
}

// reshape is Triton's ModelTensorReshape.
type reshape struct {
	Shape []int64 `json:"shape"`
}

type dynamicBatching struct {
	PreferredBatchSize        []int       `json:"preferred_batch_size"`
	MaxQueueDelayMicroseconds int64       `json:"max_queue_delay_microseconds"`
	PreserveOrdering          bool        `json:"preserve_ordering"`
	PriorityLevels            int         `json:"priority_levels"`
	DefaultPriorityLevel      int         `json:"default_priority_level"`
	DefaultQueuePolicy        queuePolicy `json:"default_queue_policy"`
}

type queuePolicy struct {
	TimeoutAction              string `json:"timeout_action"`
	DefaultTimeoutMicroseconds int64  `json:"default_timeout_microseconds"`
	AllowTimeoutOverride       bool   `json:"allow_timeout_override"`
	MaxQueueSize               int    `json:"max_queue_size"`
}

type instanceGroup struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Count int    `json:"count"`
	GPUs  []int  `json:"gpus"`
}

// Build describes the model name, as clients see it (api), as servings
// run it; labels is the labels file of an output ("" for none);
// queueTimeoutUS is the longest a request may wait without its own
// timeout.
func Build(name string, api tensor.Metadata, labels func(output string) string, servings []worker.Serving, queueTimeoutUS int64) *ModelConfig {
	b := worker.Batching{}
	if len(servings) > 0 && servings[0].Batching != nil {
		b = *servings[0].Batching
	}
	name, _ = v2.SplitServedName(name)
	cfg := &ModelConfig{Name: name, Platform: "onnxruntime_onnx", Backend: "onnxruntime",
		MaxBatchSize: b.MaxBatchSize, DefaultModelFilename: "model.onnx"}
	cfg.VersionPolicy.Latest.NumVersions = 1
	for _, s := range api.Inputs {
		dims, rs := configDims(s.Shape, b.MaxBatchSize)
		cfg.Input = append(cfg.Input, configInput{Name: s.Name, DataType: tritonType(s.DType),
			Format: "FORMAT_NONE", Dims: dims, Reshape: rs})
	}
	for _, s := range api.Outputs {
		dims, rs := configDims(s.Shape, b.MaxBatchSize)
		cfg.Output = append(cfg.Output, configOutput{Name: s.Name, DataType: tritonType(s.DType),
			Dims: dims, Reshape: rs, LabelFilename: labels(s.Name)})
	}
	if b.MaxBatchSize > 0 {
		cfg.DynamicBatching = batchingConfig(&b, queueTimeoutUS)
	}
	cfg.InstanceGroup = instanceGroups(name, servings)
	return cfg
}

// batchingConfig is dynamic_batching for b.
func batchingConfig(b *worker.Batching, queueTimeoutUS int64) *dynamicBatching {
	queue := b.MaxQueueSize
	if queue == 0 {
		queue = 1024 // internal/batch.DefaultMaxQueueSize
	}
	pref := slices.Clone(b.PreferredBatchSizes)
	if pref == nil {
		pref = []int{}
	}
	return &dynamicBatching{
		PreferredBatchSize:        pref,
		MaxQueueDelayMicroseconds: b.MaxQueueDelay.Microseconds(),
		DefaultQueuePolicy: queuePolicy{TimeoutAction: "REJECT", DefaultTimeoutMicroseconds: queueTimeoutUS,
			AllowTimeoutOverride: true, MaxQueueSize: queue},
	}
}

// instanceGroups is instance_group: a KIND_GPU group listing every GPU
// that runs the model, a KIND_CPU group counting the CPU instances.
func instanceGroups(name string, servings []worker.Serving) []instanceGroup {
	gpu := instanceGroup{Name: name + "_gpu", Kind: "KIND_GPU", GPUs: []int{}}
	cpu := instanceGroup{Name: name + "_cpu", Kind: "KIND_CPU", GPUs: []int{}}
	for _, s := range servings {
		if s.Provider == worker.ProviderCUDA {
			gpu.Count = s.Instances() // per GPU, as Triton counts it
			if !slices.Contains(gpu.GPUs, s.GPUIndex) {
				gpu.GPUs = append(gpu.GPUs, s.GPUIndex)
			}
			continue
		}
		cpu.Count += s.Instances()
	}
	slices.Sort(gpu.GPUs)
	out := []instanceGroup{}
	if gpu.Count > 0 {
		out = append(out, gpu)
	}
	if cpu.Count > 0 {
		out = append(out, cpu)
	}
	return out
}

// configDims is a shape as Triton's dims: without the batch dimension
// when the model batches. A tensor that is only its batch dimension (an
// image model's BYTES input, one image a row) is dims [1] with reshape
// [], as Triton writes it: dims may not be empty.
func configDims(shape []int64, maxBatch int) ([]int64, *reshape) {
	if maxBatch <= 0 || len(shape) == 0 {
		return append([]int64{}, shape...), nil
	}
	if len(shape) == 1 {
		return []int64{1}, &reshape{Shape: []int64{}}
	}
	return append([]int64{}, shape[1:]...), nil
}

// tritonType is Triton's model-config name of a datatype: TYPE_ and the
// V2 name, except BYTES, which model configs call TYPE_STRING.
func tritonType(d tensor.DType) string {
	if d == tensor.Bytes {
		return "TYPE_STRING"
	}
	return "TYPE_" + d.String()
}
