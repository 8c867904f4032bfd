package workerspec

import (
	"reflect"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestProcessing: prep workers are told only about the models with an
// image preprocess or a postprocess, with every key carried over.
func TestProcessing(t *testing.T) {
	c, err := config.ParseConfig([]byte("models:\n"+
		"  - {name: cls, path: m.onnx, postprocess: {output: prob, labels: l.txt, softmax: true, top_k: 5},\n"+
		"     preprocess: {kind: image, width: 256, scale: 1/255, dtype: FP16, max_pixels: 1000000, max_request_pixels: 3000000}}\n"+
		"  - {name: plain, path: p.onnx, preprocess: {kind: tensor}}\n"+
		"  - {name: raw, path: r.onnx}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	procs := Processing(c, nil, nil)
	if len(procs) != 1 || procs[0].Model != "cls" || procs[0].Image == nil || procs[0].Image.DType != "FP16" ||
		procs[0].Image.Width != 256 || procs[0].Image.MaxRequestPixels != 3000000 || procs[0].Image.Height != 0 || procs[0].Image.Scale != float32(1.0/255) ||
		!reflect.DeepEqual(procs[0].Classify, &worker.Classify{Output: "prob", Labels: "l.txt", Softmax: true, TopK: 5}) {
		t.Errorf("Processing() = %+v", procs)
	}
}

// TestProcessingCache: a model with response_cache gets its segment, TTL,
// an identity of its name and settings (not its path) and its file's
// content identity as the model part of its keys.
func TestProcessingCache(t *testing.T) {
	c, err := config.ParseConfig([]byte("models:\n"+
		"  - {name: raw, path: r.onnx, response_cache: {enable: true, ttl: 5s}}\n"+
		"  - {name: off, path: o.onnx, response_cache: {enable: false}}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	models := []worker.Model{{Name: "raw", Path: "r.onnx", Version: "1-1"}, {Name: "off", Path: "o.onnx"}}
	procs := Processing(c, models, map[string]string{"raw": "/dev/shm/x"})
	if len(procs) != 1 || procs[0].Cache == nil || procs[0].Cache.Path != "/dev/shm/x" || procs[0].Cache.TTL != 5*time.Second {
		t.Fatalf("Processing() = %+v", procs)
	}
	if procs[0].Cache.Model != "1-1" {
		t.Errorf("cache model identity %q, want the spec's version 1-1", procs[0].Cache.Model)
	}
	models[0].Version, models[0].Path = "1-2", "elsewhere.onnx"
	if again := Processing(c, models, map[string]string{"raw": "/dev/shm/x"}); again[0].Cache.Identity != procs[0].Cache.Identity || again[0].Cache.Model != "1-2" {
		t.Errorf("another file: identity %q model %q, want %q and 1-2", again[0].Cache.Identity, again[0].Cache.Model, procs[0].Cache.Identity)
	}
}
