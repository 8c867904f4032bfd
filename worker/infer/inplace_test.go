package infer

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
)

// inferCtx runs one /infer request of model on s: one row of MLP inputs.
func inferCtx(s *server, model string) *fasthttp.RequestCtx {
	x := make([]byte, 4*onnxmodel.MLPIn)
	for i := range onnxmodel.MLPIn {
		binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(float32(i)/10))
	}
	frame := tensor.AppendRequest(nil, &tensor.Request{Model: model,
		Inputs: []tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{1, onnxmodel.MLPIn}, Data: x}}})
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(fasthttp.MethodPost)
	ctx.Request.SetRequestURI("/infer")
	ctx.Request.SetBody(frame)
	s.handle(&ctx)
	return &ctx
}

// changeCtx posts ch to s's change in place.
func changeCtx(t *testing.T, s *server, ch worker.ModelsChange) []worker.ModelStatus {
	t.Helper()
	b, err := json.Marshal(ch)
	if err != nil {
		t.Fatal(err)
	}
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(fasthttp.MethodPost)
	ctx.Request.SetRequestURI(worker.ModelsPath)
	ctx.Request.SetBody(b)
	s.changeModels(&ctx)
	if ctx.Response.StatusCode() != fasthttp.StatusOK {
		t.Fatalf("change: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	var sts []worker.ModelStatus
	if err := json.Unmarshal(ctx.Response.Body(), &sts); err != nil {
		t.Fatal(err)
	}
	return sts
}

// TestChangeModelsInPlace: a change in place keeps the session of a model
// it keeps (the same *model), loads the added one, retires the dropped
// one (its requests then get 503 saying so), and makes one that fails to
// load unavailable with its reason while the others serve; GET /metadata
// follows.
func TestChangeModelsInPlace(t *testing.T) {
	lib, path := mlpOnDisk(t)
	garbage := filepath.Join(t.TempDir(), "garbage.onnx")
	if err := os.WriteFile(garbage, []byte("not an ONNX model"), 0o644); err != nil {
		t.Fatal(err)
	}
	model := func(name, p string) worker.Model { return worker.Model{Name: name, Path: p} }
	spec := &worker.Spec{Role: worker.RoleInfer, Name: "infer-0", ORTLibrary: lib, IntraOpThreads: 1,
		Provider: worker.ProviderCPU, Models: []worker.Model{model("a", path), model("b", path)}}
	s, err := load(&worker.Runtime{Spec: spec, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	a := s.cat.Load().models["a"]
	if ctx := inferCtx(s, "b"); ctx.Response.StatusCode() != fasthttp.StatusOK {
		t.Fatalf("b before the change: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}

	sts := changeCtx(t, s, worker.ModelsChange{Models: []worker.Model{model("a", path), model("c", path), model("bad", garbage)},
		Slots: []string{"a", "b", "c", "bad"}})
	if len(sts) != 3 || sts[0].Name != "a" || sts[1].Name != "c" || sts[1].Unavailable != "" || sts[2].Name != "bad" || sts[2].Unavailable == "" {
		t.Errorf("metadata after the change: %+v; want a, c serving, bad unavailable", sts)
	}
	if s.cat.Load().models["a"] != a {
		t.Error("a was loaded again; want its session kept")
	}
	for name, want := range map[string]int{"a": fasthttp.StatusOK, "c": fasthttp.StatusOK, "b": fasthttp.StatusServiceUnavailable, "bad": fasthttp.StatusServiceUnavailable} {
		ctx := inferCtx(s, name)
		if ctx.Response.StatusCode() != want {
			t.Errorf("%s after the change: %d %s, want %d", name, ctx.Response.StatusCode(), ctx.Response.Body(), want)
		}
		if name == "b" && !strings.Contains(string(ctx.Response.Body()), "retired by a reload") {
			t.Errorf("b after the change: %s, want it said retired", ctx.Response.Body())
		}
	}
	var md []worker.ModelStatus
	if err := json.Unmarshal(s.cat.Load().metaJSON, &md); err != nil || len(md) != 3 {
		t.Errorf("GET /metadata after the change: %s (%v), want a, c and bad", s.cat.Load().metaJSON, err)
	}
}
