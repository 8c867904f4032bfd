package worker

// Serving is how one infer worker runs one model: what Triton's model
// configuration extension reports as dynamic_batching and instance_group.
// The infer worker sends it with the model's metadata (ModelStatus), so
// that a prep worker describes the model as the workers that serve it run
// it, not as a config file it may not have seen yet says.
type Serving struct {
	// Batching is the model's batcher settings; nil = batching off with
	// the default queue bound and one instance.
	Batching *Batching `json:"batching,omitempty"`
	// Provider is the worker's execution provider, ProviderCPU or
	// ProviderCUDA.
	Provider string `json:"provider"`
	// GPUIndex is a CUDA worker's GPU as the host numbers it (NVML index,
	// as nvidia-smi shows it); meaningless with ProviderCPU.
	GPUIndex int `json:"gpu_index,omitempty"`
}

// Instances is how many batches of the model the worker runs at once
// (Batching.Instances, at least 1).
func (s *Serving) Instances() int {
	if s.Batching == nil || s.Batching.Instances < 1 {
		return 1
	}
	return s.Batching.Instances
}
