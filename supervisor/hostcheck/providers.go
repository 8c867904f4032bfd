package hostcheck

import (
	"errors"
	"fmt"
	"strings"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/cudalib"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// ErrGPUPlanCannotRun is matched by Providers' error when a planned
// GPU worker could not start its execution providers.
var ErrGPUPlanCannotRun = errors.New("a planned GPU worker cannot run")

// ProviderReport is what `supervisor check` says about execution
// providers, before any worker boots: what the library offers, whether
// ONNX Runtime loads each GPU provider (and the CUDA libraries it links)
// when asked to, where those libraries were found or not and, for each
// planned infer worker with a GPU, whether its providers can start.
type ProviderReport struct {
	Library   string
	Available []string // OrtGetAvailableProviders, in ORT's order
	// Tried is ort.TryProvider's answer for CUDA and TensorRT: nil when
	// ONNX Runtime loaded the provider and what it links.
	Tried map[string]error
	// Libraries is where the provider libraries' CUDA, cuDNN and
	// TensorRT libraries are, or are not (cudalib).
	Libraries cudalib.Resolution
	// GPUWorkers has one entry per planned infer worker with a GPU.
	GPUWorkers []GPUWorkerCheck
}

// GPUWorkerCheck is one GPU worker's verdict.
type GPUWorkerCheck struct {
	Worker, Device string
	// Err is why it cannot run (a *ort.ProviderError inside); nil means
	// ONNX Runtime loaded the providers it needs. Only a session proves
	// they start on the device.
	Err error
}

// Providers lists the providers of the ONNX Runtime library cfg's
// workers will load, tries CUDA and TensorRT in this process (ort.Init,
// then ort.TryProvider: this process's LD_LIBRARY_PATH must be what the
// workers get, see LibraryPath), and checks each GPU worker of plan: CUDA
// always, TensorRT when a model turns it on. The error matches
// ErrGPUPlanCannotRun when some GPU worker cannot run; the report is
// complete either way.
func Providers(cfg *config.Config, plan *affinity.Placement) (*ProviderReport, error) {
	lib, err := library(cfg)
	if err != nil {
		return nil, err
	}
	avail, err := ort.AvailableProviders(lib)
	if err != nil {
		return nil, err
	}
	r := &ProviderReport{Library: lib, Available: avail, Tried: map[string]error{},
		Libraries: cudalib.System(cfg.CUDA.LibraryDirs).ForLibrary(lib, cudalib.Providers...)}
	initErr := ort.Init(lib)
	for _, p := range []string{ort.ProviderCUDA, ort.ProviderTensorRT} {
		r.Tried[p] = initErr
		if initErr == nil {
			r.Tried[p] = ort.TryProvider(p)
		}
	}
	var bad []string
	for _, a := range plan.Workers {
		if a.GPU == nil {
			continue
		}
		w := GPUWorkerCheck{Worker: a.Name, Device: a.Device()}
		for _, p := range gpuProviders(cfg) {
			if err := r.Tried[p]; err != nil {
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

// library is the ONNX Runtime library cfg's workers load.
func library(cfg *config.Config) (string, error) {
	if cfg.ONNXRuntimeLibrary != "" {
		return cfg.ONNXRuntimeLibrary, nil
	}
	return ort.FindLibrary()
}

// LibraryPath is the LD_LIBRARY_PATH a GPU worker of cfg gets: the
// directories outside the loader's own where the CUDA, cuDNN and TensorRT
// libraries its providers link were found, then the inherited one. ""
// when none was found there (the inherited value stands).
func LibraryPath(cfg *config.Config, inherited string) string {
	lib, err := library(cfg)
	if err != nil {
		return ""
	}
	p := cudalib.System(cfg.CUDA.LibraryDirs).ForLibrary(lib, cudalib.Providers...).LibraryPath()
	if p == "" || inherited == p || strings.HasPrefix(inherited, p+":") {
		return ""
	}
	if inherited != "" {
		p += ":" + inherited
	}
	return p
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
		verdict := "usable (ONNX Runtime loaded its provider library and the libraries it links)"
		if err := r.Tried[p]; err != nil {
			verdict = "not usable: " + providerReason(err)
		}
		fmt.Fprintf(&b, "#   %s: %s\n", p, verdict)
	}
	b.WriteString("# Libraries the GPU providers load (scripts/fetch-ort gpu; docs/gpu-hosts.md):\n")
	for _, line := range strings.Split(strings.TrimRight(r.Libraries.String(), "\n"), "\n") {
		if line != "" {
			fmt.Fprintf(&b, "#   %s\n", line)
		}
	}
	if p := r.Libraries.LibraryPath(); p != "" {
		fmt.Fprintf(&b, "#   GPU workers get LD_LIBRARY_PATH=%s\n", p)
	}
	if len(r.GPUWorkers) == 0 {
		b.WriteString("# No GPU worker is planned: every infer worker runs on the CPU provider.\n")
	}
	for _, w := range r.GPUWorkers {
		verdict := "can run (ONNX Runtime loaded its providers; the first session proves the device)"
		if w.Err != nil {
			verdict = "cannot run: this ONNX Runtime has no usable " + providerName(w.Err) + " (" + providerReason(w.Err) +
				"); run scripts/fetch-ort gpu and install the missing libraries above (see docs/gpu-hosts.md), or set infer.gpus: [] to serve on the CPU"
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
