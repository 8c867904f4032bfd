package hostcheck

import (
	"errors"
	"fmt"
	"strings"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// ErrGPUPlanCannotRun is matched by Providers' error when a planned
// GPU worker could not start its execution providers.
var ErrGPUPlanCannotRun = errors.New("a planned GPU worker cannot run")

// ProviderReport is what `supervisor check` says about execution
// providers, before any worker boots: what the library offers and, for
// each planned infer worker with a GPU, whether its providers can start.
type ProviderReport struct {
	Library   string
	Available []string // OrtGetAvailableProviders, in ORT's order
	// GPUWorkers has one entry per planned infer worker with a GPU.
	GPUWorkers []GPUWorkerCheck
}

// GPUWorkerCheck is one GPU worker's verdict.
type GPUWorkerCheck struct {
	Worker, Device string
	// Err is why it cannot run (a *ort.ProviderError inside); nil means
	// the library has the providers it needs. Only a session proves that
	// the CUDA, cuDNN and TensorRT libraries load on the device.
	Err error
}

// Providers lists the providers of the ONNX Runtime library cfg's
// workers will load, and checks each GPU worker of plan against it: CUDA
// always, TensorRT when a model turns it on. The error matches
// ErrGPUPlanCannotRun when some GPU worker cannot run; the report is
// complete either way.
func Providers(cfg *config.Config, plan *affinity.Placement) (*ProviderReport, error) {
	lib := cfg.ONNXRuntimeLibrary
	if lib == "" {
		var err error
		if lib, err = ort.FindLibrary(); err != nil {
			return nil, err
		}
	}
	avail, err := ort.AvailableProviders(lib)
	if err != nil {
		return nil, err
	}
	r := &ProviderReport{Library: lib, Available: avail}
	var bad []string
	for _, a := range plan.Workers {
		if a.GPU == nil {
			continue
		}
		w := GPUWorkerCheck{Worker: a.Name, Device: a.Device()}
		for _, p := range gpuProviders(cfg) {
			if err := ort.CheckProvider(lib, avail, p); err != nil {
				w.Err = err
				bad = append(bad, a.Name)
				break
			}
		}
		r.GPUWorkers = append(r.GPUWorkers, w)
	}
	if len(bad) > 0 {
		return r, fmt.Errorf("%w: %s (see the providers above)", ErrGPUPlanCannotRun, strings.Join(bad, ", "))
	}
	return r, nil
}

// gpuProviders are the providers a GPU worker starts: TensorRT first when
// any model of cfg enables it, then CUDA.
func gpuProviders(cfg *config.Config) []string {
	for _, m := range cfg.Models {
		if cfg.ModelProviders(m).TensorRT.Enable {
			return []string{ort.ProviderTensorRT, ort.ProviderCUDA}
		}
	}
	return []string{ort.ProviderCUDA}
}

// String renders the report as YAML comments, as check prints it.
func (r *ProviderReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# ONNX Runtime %q offers: %s\n", r.Library, strings.Join(r.Available, ", "))
	for _, p := range []string{ort.ProviderCUDA, ort.ProviderTensorRT} {
		verdict := "usable (its provider libraries are present)"
		if err := ort.CheckProvider(r.Library, r.Available, p); err != nil {
			verdict = "not usable: " + providerReason(err)
		}
		fmt.Fprintf(&b, "#   %s: %s\n", p, verdict)
	}
	if len(r.GPUWorkers) == 0 {
		b.WriteString("# No GPU worker is planned: every infer worker runs on the CPU provider.\n")
	}
	for _, w := range r.GPUWorkers {
		verdict := "can run (the library has its providers; the first session proves CUDA and cuDNN load)"
		if w.Err != nil {
			verdict = "cannot run: this ONNX Runtime has no usable " + providerName(w.Err) + " (" + providerReason(w.Err) +
				"); run scripts/fetch-ort gpu (see README, GPU hosts) or point onnxruntime_library at a GPU build, or set infer.gpus: [] to serve on the CPU"
		}
		fmt.Fprintf(&b, "# %s (%s): %s\n", w.Worker, w.Device, verdict)
	}
	return b.String()
}

func providerName(err error) string {
	if pe := (*ort.ProviderError)(nil); errors.As(err, &pe) {
		return pe.Provider
	}
	return "GPU provider"
}

// providerReason is the missing piece, without ProviderError's hint
// (String gives its own).
func providerReason(err error) string {
	if pe := (*ort.ProviderError)(nil); errors.As(err, &pe) {
		return fmt.Sprintf("could not %s: %v", pe.Step, pe.Err)
	}
	return err.Error()
}
