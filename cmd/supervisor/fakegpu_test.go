package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/affinity/nvmltest"
)

// These tests give the binary and the scripts a GPU host through a fake
// NVML library (affinity/nvmltest) on LD_LIBRARY_PATH, with the CPU build
// of ONNX Runtime: what a GPU host looks like before `scripts/fetch-ort gpu`.

// fakeGPUEnv is the environment that makes `supervisor` see gpus fake GPUs.
func fakeGPUEnv(t *testing.T, gpus int) []string {
	t.Helper()
	return []string{"LD_LIBRARY_PATH=" + nvmltest.Library(t, gpus)}
}

// needCPUBuild skips a test when the ONNX Runtime library has the CUDA
// provider beside it: there a GPU worker's plan could run.
func needCPUBuild(t *testing.T) string {
	t.Helper()
	lib := needORT(t)
	if _, err := os.Stat(filepath.Join(filepath.Dir(lib), "libonnxruntime_providers_cuda.so")); err == nil {
		t.Skip("this ONNX Runtime library has the CUDA provider library beside it")
	}
	return lib
}

// runWithEnv runs the command with env added; it returns stdout, stderr
// and the exit code.
func runWithEnv(t *testing.T, env []string, name string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// TestGPUsFakeNVML: `supervisor gpus` prints the driver and each GPU as
// NVML reports them.
func TestGPUsFakeNVML(t *testing.T) {
	out, errOut, code := runWithEnv(t, fakeGPUEnv(t, 2), binPath, "gpus")
	want := []string{"NVIDIA driver 550.54.15 (CUDA 12.4), 2 GPUs\n",
		"GPU 0  GPU-fake-0  Fake GPU  0000:18:00.0  ", "GPU 1  GPU-fake-1  Fake GPU  0000:9a:00.0  "}
	for _, w := range want {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("supervisor gpus: exit %d, stdout %q, stderr %q; want it to contain %q", code, out, errOut, w)
		}
	}
}

// TestCheckGPUPlanCannotRun: on a GPU host with the CPU build of ONNX
// Runtime, `supervisor check` plans an infer worker on the GPU, prints
// the providers the library offers and that this worker cannot run, with
// what to do, and exits 1 before any worker boots.
func TestCheckGPUPlanCannotRun(t *testing.T) {
	lib := needCPUBuild(t)
	conf := filepath.Join(t.TempDir(), "gpu.yaml")
	yaml := fmt.Sprintf("onnxruntime_library: %q\nmodels:\n  - {name: m, path: %q}\nplacement: {overcommit: true}\n",
		lib, filepath.Join(modelsDir, "mlp.onnx"))
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runWithEnv(t, fakeGPUEnv(t, 1), binPath, "check", "-c", conf)
	for _, w := range []string{"1 GPU found", "GPU 0 GPU-fake-0", fmt.Sprintf("# ONNX Runtime %q offers: ", lib),
		"CPUExecutionProvider\n", "#   CUDAExecutionProvider: not usable: ", "# infer-0 (GPU 0 GPU-fake-0): cannot run: this ONNX Runtime has no usable CUDAExecutionProvider",
		"run scripts/fetch-ort gpu"} {
		if !strings.Contains(out, w) {
			t.Errorf("check's output lacks %q:\n%s", w, out)
		}
	}
	if code != 1 || !strings.Contains(errOut, "a planned GPU worker cannot run: infer-0") {
		t.Errorf("check: exit %d, stderr %q; want exit 1 saying infer-0 cannot run", code, errOut)
	}
	if strings.Contains(errOut, "every model loads") {
		t.Errorf("check went on to load the models after the GPU verdict: %s", errOut)
	}
}

// TestGPUCheckScriptFakeGPU: on a GPU host whose ONNX Runtime cannot run
// the GPU workers, scripts/gpu-check prints the NVML view and check's
// verdict, then stops with exit 1 before any throughput run.
func TestGPUCheckScriptFakeGPU(t *testing.T) {
	needCPUBuild(t)
	if _, err := os.Stat("../../models/default.onnx"); err != nil {
		t.Skip("models/default.onnx is missing: run `make setup` (check loads it)")
	}
	env := append(fakeGPUEnv(t, 1), "SUPERVISOR_BIN="+binPath, "OUT="+t.TempDir())
	out, errOut, code := runWithEnv(t, env, "../../scripts/gpu-check")
	for _, w := range []string{"GPU 0  GPU-fake-0  Fake GPU", "cannot run: this ONNX Runtime has no usable CUDAExecutionProvider"} {
		if !strings.Contains(out, w) {
			t.Errorf("gpu-check's output lacks %q:\n%s", w, out)
		}
	}
	if code != 1 || !strings.Contains(errOut, "gpu-check: supervisor check failed") || strings.Contains(out, "== GPU 0:") {
		t.Errorf("gpu-check: exit %d, stderr %q; want exit 1 at check's verdict, before any GPU run:\n%s", code, errOut, out)
	}
}

// TestFetchORTAutoGPU: where NVML sees a GPU, auto installs the GPU build
// (here from local tarballs) and says why; no hash is asked for, as the
// script pins the registry's.
func TestFetchORTAutoGPU(t *testing.T) {
	dir, sums := fakeORTTarballs(t)
	dest := filepath.Join(t.TempDir(), "ort")
	env := append(append(fakeGPUEnv(t, 1), "SUPERVISOR_BIN="+binPath, "ORT_TARBALLS="+dir), sums...)
	out, ok := fetchORT(t, env, "auto", dest)
	if want := "NVML sees a GPU (NVIDIA driver 550.54.15 (CUDA 12.4), 1 GPU): installing the GPU build"; !ok || !strings.Contains(out, want) {
		t.Errorf("fetch-ort auto with a GPU: succeeded=%v, stderr %q; want it to say %q", ok, out, want)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "VERSION")); err != nil || string(b) != "1.29.0 gpu\n" {
		t.Errorf("VERSION after fetch-ort auto = %q, %v; want the GPU build", b, err)
	}
}

// TestGPUCheckScriptGPURuns drives gpu-check's GPU steps without a GPU:
// NVML is the fake one (two GPUs, through the real `supervisor gpus`),
// check's verdict is a canned pass (no stub can make ONNX Runtime load
// the CUDA provider here; TestCheckGPUPlanCannotRun covers the real
// check), and BENCH, JPEG_BENCH and NVIDIA_SMI are fakes: the benches
// record how they were called and write the summary files the real ones
// write; the sampler prints two samples on GPU 0 and one on GPU 1. It
// checks that every model runs on every GPU with the right modes, that
// each run is sampled, and that the summary tabulates the figures
// (served / raw, pinned / off, JPEG images/s, utilisation) and ends the
// output. What the real benches measure on a GPU is not tested here.
func TestGPUCheckScriptGPURuns(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	check := "# Placement on this host: 2 GPUs\n" +
		"# ONNX Runtime \"/opt/ort/libonnxruntime.so.1\" offers: CPUExecutionProvider\n" +
		"# Libraries the GPU providers load (scripts/fetch-ort gpu; docs/gpu-hosts.md):\n" +
		"#   found libcudart.so.13 in /py/nvidia/cuda_runtime/lib/libcudart.so.13 (python wheels)\n" +
		"#   missing libnvinfer.so.10\n" +
		"# infer-0 (GPU 0 GPU-fake-0): can run\n# infer-1 (GPU 1 GPU-fake-1): can run\n"
	scripts := map[string]string{
		"supervisor": "#!/bin/sh\nif [ \"$1\" = check ]; then printf '" + check + "'; exit 0; fi\nexec " + binPath + " \"$@\"\n",
		// gpu-check calls it with -i <index>: GPU 1 gets one sample.
		"nvidia-smi": "#!/bin/sh\nif [ \"$2\" = 1 ]; then echo '40, 1000'; else printf '40, 1000\\n60, 3000\\n'; fi\nexec sleep 60\n",
		// Each waits (bounded) for the sampler's lines, as a real load lasts longer than one sample.
		"bench": "#!/bin/sh\necho \"MODEL=$MODEL GPUS=$GPUS MODES=$MODES HANDOFFS=$HANDOFFS CUDNN=$CUDNN\" >>\"$OUT/calls\"\n" +
			"printf 'model=%s\\nmaxb=32\\nraw1=500\\nrawb=2000\\nsat=1800\\non32=1800\\noff32=600\\npinned32=%s\\non_c1=400\\non_c8=1200\\non_c32=1800\\non_c64=1700\\noff_c1=450\\noff_c32=600\\n' \"$MODEL\" \"$([ \"$MODEL\" = default ] && echo 1980)\" >\"$OUT/$MODEL-summary.txt\"\n" +
			"for i in $(seq 50); do [ \"$(wc -l <\"$OUT/$MODEL-util.csv\")\" -ge $((2 - GPUS)) ] && exit 0; sleep 0.1; done\n",
		"jpeg": "#!/bin/sh\necho \"JPEG MODEL=$MODEL GPUS=$GPUS DATA=$DATA\" >>\"$OUT/calls\"\n" +
			"printf 'prep14_c1=90.5\\nprep14_c32=812.25\\n' >\"$OUT/$MODEL-jpeg-summary.txt\"\n" +
			"for i in $(seq 50); do [ \"$(wc -l <\"$OUT/$MODEL-jpeg-util.csv\")\" -ge $((2 - GPUS)) ] && exit 0; sleep 0.1; done\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(fakeGPUEnv(t, 2), "SUPERVISOR_BIN="+filepath.Join(dir, "supervisor"), "OUT="+out, "DATA=/data",
		"BENCH="+filepath.Join(dir, "bench"), "JPEG_BENCH="+filepath.Join(dir, "jpeg"), "NVIDIA_SMI="+filepath.Join(dir, "nvidia-smi"))
	stdout, stderr, code := runWithEnv(t, env, "../../scripts/gpu-check")
	if code != 0 {
		t.Fatalf("gpu-check: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for i := range 2 {
		want := fmt.Sprintf("MODEL=default GPUS=%d MODES=on off pinned HANDOFFS=shm CUDNN=HEURISTIC\n"+
			"MODEL=resnet50 GPUS=%d MODES=on off HANDOFFS=shm CUDNN=HEURISTIC\n"+
			"MODEL=resnet50-fp16 GPUS=%d MODES=on off HANDOFFS=shm CUDNN=HEURISTIC\n"+
			"JPEG MODEL=squeezenet GPUS=%d DATA=/data\nJPEG MODEL=resnet50 GPUS=%d DATA=/data\n", i, i, i, i, i)
		if b, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("gpu-%d", i), "calls")); err != nil || string(b) != want {
			t.Errorf("the runs on GPU %d were\n%s(%v); want\n%s", i, b, err, want)
		}
	}
	summary := stdout[strings.LastIndex(stdout, "== summary ==\n"):]
	for _, want := range []string{
		"driver: NVIDIA driver 550.54.15 (CUDA 12.4), 2 GPUs\n",
		"ONNX Runtime /opt/ort/libonnxruntime.so.1\n",
		"libraries: found libcudart.so.13 in /py/nvidia/cuda_runtime/lib/libcudart.so.13 (python wheels)\n",
		"libraries: missing libnvinfer.so.10\n",
		"GPU 0: GPU-fake-0  Fake GPU  0000:18:00.0",
		"default            500.0    2000.0    32    400.0   1200.0   1800.0   1700.0    450.0    600.0    0.90       50/60    3000\n",
		"               output_binding pinned / off at concurrency 32, batching on: 1.10x (turn pinned on only above 1)\n",
		"resnet50-fp16      500.0    2000.0    32    400.0   1200.0   1800.0   1700.0    450.0    600.0    0.90       40/40    1000\n",
		"JPEG squeezenet: 14 prep, c=1: 90.5 images/s; 14 prep, c=32: 812.2 images/s; 50%/60% util, 3000 MiB\n",
		"JPEG resnet50: 14 prep, c=1: 90.5 images/s; 14 prep, c=32: 812.2 images/s; 40%/40% util, 1000 MiB\n",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("gpu-check's summary lacks %q:\n%s", want, summary)
		}
	}
	if strings.Count(summary, "output_binding pinned / off") != 2 || strings.Count(stdout, "GPU utilisation during the load (NVML, 1 sample):") != 5 {
		t.Errorf("want one pinned line per GPU in the summary and five single-sample runs on GPU 1:\n%s", stdout)
	}
	if lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n"); !strings.HasPrefix(lines[len(lines)-1], "gpu-check: done in ") {
		t.Errorf("last line %q; want gpu-check's closing line", lines[len(lines)-1])
	}
}

// TestRunUnprivilegedTensorRTCache: with workers.user set, the master
// makes a model's TensorRT engine cache directory in a state directory
// that is root's and 0755 (as /var/lib/onnx-supervisor under systemd), owned by
// the workers' user, so that the GPU worker running as that user gets
// past it to TensorRT itself (which the CPU build of ONNX Runtime then
// refuses) instead of failing to create it.
func TestRunUnprivilegedTensorRTCache(t *testing.T) {
	needCPUBuild(t)
	if os.Getuid() != 0 {
		t.Skip("needs root: only a root master may start workers as another user")
	}
	for _, d := range []string{suiteDir, modelsDir} { // nobody must read the models
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := t.TempDir()
	for _, d := range []string{filepath.Dir(state), state} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(state, "trt-engines")
	in := startInstance(t, options{modelNames: []string{"mlp"}, prepWorkers: 1, env: fakeGPUEnv(t, 1), noWait: true,
		extra: "workers:\n  user: nobody\n",
		modelItems: fmt.Sprintf("  - {name: trt, path: %s, providers: {tensorrt: {enable: true, engine_cache_dir: %s}}}\n",
			filepath.Join(modelsDir, "mlp.onnx"), cache)})
	pollUntil(t, 60*time.Second, "the GPU worker's boot error in the log", func() bool {
		return strings.Contains(in.log.String(), "no model can run on this worker's GPU")
	})
	var st syscall.Stat_t
	if err := syscall.Stat(cache, &st); err != nil || st.Uid != 65534 || st.Mode&0o777 != 0o750 {
		t.Errorf("engine cache %q: %v, uid %d, mode %o; want it made 0750 for nobody (65534)", cache, err, st.Uid, st.Mode&0o777)
	}
	log := in.log.String()
	if !strings.Contains(log, "is not available: could not set its options map[device_id:0 trt_engine_cache_enable:1 trt_engine_cache_path:"+cache) ||
		strings.Contains(log, "create its engine cache directory") {
		t.Errorf("the trt model's refusal is not TensorRT's own (the cache directory stood in the way?):\n%s", log)
	}
}

// TestRunGPUWorkerBootError: a master that plans an infer worker on a GPU,
// with the CPU build of ONNX Runtime, starts it with the CUDA provider and
// CUDA_VISIBLE_DEVICES set to that GPU, and the worker's boot fails with
// the error that names the provider and what to do (the master keeps
// retrying it; `supervisor check` says so before).
func TestRunGPUWorkerBootError(t *testing.T) {
	needCPUBuild(t)
	in := startInstance(t, options{modelNames: []string{"mlp"}, prepWorkers: 1, env: fakeGPUEnv(t, 1), noWait: true})
	// The worker's last word on its boot: every line before it is written.
	want := "no model can run on this worker's GPU: model \"mlp\": could not open model"
	pollUntil(t, 60*time.Second, "the GPU worker's boot error in the log", func() bool {
		return strings.Contains(in.log.String(), want)
	})
	for _, w := range []string{`"worker":"infer-0"`, `"provider":"cuda"`, `"cuda_visible_devices":"GPU-fake-0"`,
		"CUDAExecutionProvider is not available", "scripts/fetch-ort gpu"} {
		if !strings.Contains(in.log.String(), w) {
			t.Errorf("the log lacks %q", w)
		}
	}
}
