package ort

// OutputsCPU binds outputs to ORT's CPU allocator, so that tests run the
// output binding path (outbind.go) without a GPU.
const OutputsCPU = outputsCPU

// BindOutputsTo rebinds s's outputs to the named ORT allocator's memory
// (OrtMemTypeCPUOutput), bypassing Open's checks: the CPU build's answer
// to "CudaPinned" can only be seen this way, since Open refuses pinned
// outputs without CUDA, which the CPU build cannot start.
func BindOutputsTo(s *Session, name string) error {
	api, err := loadedAPI()
	if err != nil {
		return err
	}
	info, err := newMemoryInfo(api, name, -1)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outMem.release()
	s.outMem = &outputMemory{api: api, info: info, name: name}
	return nil
}
