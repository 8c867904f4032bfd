package modelcheck

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// An infer worker loads and warms up every model, one after the other,
// before it says ready; the master kills it at boot_timeout and boots it
// again without the model it was on (which is then unavailable). So
// `supervisor check` estimates what each model's loading and warm-up cost
// and warns when that cannot fit boot_timeout.
//
// The estimate is an estimate: it times the load, then one zeros run at
// batch size 1 and one at a small batch (16, or max_batch_size when
// smaller), here, on one CPU thread, and extrapolates linearly by batch
// size (a fixed cost per run plus a cost per row) over the warm-up's
// batch sizes (batch.WarmupSizes). Workers with more threads or a GPU are
// faster; a model whose cost grows faster than its rows is slower.

// warmupProbe is the largest batch size the estimate runs.
const warmupProbe = 16

// modelCost is one model's estimated cost in an infer worker's boot.
type modelCost struct {
	name        string
	load, warm  time.Duration
	sizes       []int
	at1, atK    time.Duration // one run at batch size 1, and at k
	k           int
	notEstimate string // why the warm-up was not timed ("" when it was)
}

// WarmupWarnings returns one sentence per model whose loading and warm-up
// are estimated not to fit boot_timeout or, when each does, one for all
// of them together (each infer worker loads every model); nil when they
// fit. Models that do not load are Load's to report.
func WarmupWarnings(c *config.Config) []string {
	if err := ort.Init(c.ONNXRuntimeLibrary); err != nil {
		return nil
	}
	bound := c.BootTimeout.Duration
	var warnings []string
	var total time.Duration
	for _, m := range c.Models {
		mc, ok := estimateModel(m)
		if !ok {
			continue
		}
		total += mc.load + mc.warm
		if mc.load+mc.warm > bound {
			warnings = append(warnings, mc.warning(bound))
		}
	}
	if total > bound && len(warnings) == 0 {
		warnings = append(warnings, fmt.Sprintf("loading and warming up all %d models is estimated at %s in each infer worker (it loads them one after the other before it is ready), "+
			"over boot_timeout (%s): the worker would be killed on the model it is loading then, which would be unavailable. "+
			"Raise boot_timeout, or lower the models' max_batch_size, or set warmup: none on some (an estimate: see each model's load and warm-up times)",
			len(c.Models), short(total), bound))
	}
	return warnings
}

func (mc modelCost) warning(bound time.Duration) string {
	how := fmt.Sprintf("loading took %s here", short(mc.load))
	if mc.notEstimate == "" && len(mc.sizes) > 1 {
		how += fmt.Sprintf("; its zeros warm-up runs batch sizes %s (%d rows), and one run took %s at batch size 1 and %s at %d, "+
			"extrapolated linearly by batch size to %s", describeSizes(mc.sizes), sum(mc.sizes), short(mc.at1), short(mc.atK), mc.k, short(mc.warm))
	} else if mc.notEstimate == "" {
		how += fmt.Sprintf("; its warm-up run took %s", short(mc.warm))
	}
	return fmt.Sprintf("model %q: loading and warming it up is estimated at %s (%s; on one CPU thread: an estimate), over boot_timeout (%s): "+
		"an infer worker would be killed while on it, and the model would be unavailable. Raise boot_timeout, lower its max_batch_size, or set its warmup: none",
		mc.name, short(mc.load+mc.warm), how, bound)
}

// estimateModel times m's load and estimates its warm-up; ok is false when
// it does not load.
func estimateModel(m config.ModelConfig) (mc modelCost, ok bool) {
	mc.name = m.Name
	start := time.Now()
	s, err := ort.Open(m.Path, m.Name, ort.Options{IntraOpThreads: 1})
	if err != nil {
		return mc, false
	}
	defer s.Close()
	mc.load = time.Since(start)
	switch {
	case m.Warmup == config.WarmupNone:
		mc.notEstimate = "warmup: none"
		return mc, true
	case m.Warmup != "" && m.Warmup != config.WarmupZeros:
		mc.notEstimate = "a request file: one run"
		return mc, true
	}
	if b, err := os.ReadFile(m.Path); err == nil {
		// A zero divisor kills the process inside ONNX Runtime: the master
		// survives an infer worker's death, check would not.
		if ops, err := onnxmodel.OpTypes(b); err == nil && (ops["Div"] || ops["Mod"]) {
			mc.notEstimate = "its graph divides"
			return mc, true
		}
	}
	maxBatch, preferred := 0, []int(nil)
	if m.Batching != nil {
		maxBatch, preferred = m.Batching.MaxBatchSize, m.Batching.PreferredBatchSizes
	}
	mc.sizes = batch.WarmupSizes(maxBatch, preferred)
	md := s.Metadata()
	if mc.at1, err = timeRun(s, md.Inputs, 1, maxBatch > 0); err != nil {
		mc.notEstimate = "its zeros warm-up fails"
		return mc, true
	}
	mc.warm, mc.atK, mc.k = mc.at1, mc.at1, 1
	if maxBatch <= 1 {
		return mc, true
	}
	mc.k = min(maxBatch, warmupProbe)
	if mc.atK, err = timeRun(s, md.Inputs, mc.k, true); err != nil {
		mc.notEstimate = "its zeros warm-up fails"
		return mc, true
	}
	perRow := max(0, (mc.atK-mc.at1)/time.Duration(mc.k-1))
	fixed := max(0, mc.at1-perRow)
	mc.warm = 0
	for _, n := range mc.sizes {
		mc.warm += fixed + perRow*time.Duration(n)
	}
	return mc, true
}

// timeRun runs the zeros warm-up inputs of rows rows three times and
// returns the fastest of the last two (the first pays the first run).
func timeRun(s *ort.Session, specs []tensor.Spec, rows int, batching bool) (time.Duration, error) {
	in, err := batch.WarmupInputs(specs, rows, batching, false)
	if err != nil {
		return 0, err
	}
	best := time.Duration(-1)
	for i := range 3 {
		start := time.Now()
		if _, err := s.RunContext(context.Background(), in, nil); err != nil {
			return 0, err
		}
		if took := time.Since(start); i > 0 && (best < 0 || took < best) {
			best = took
		}
	}
	return best, nil
}

// describeSizes writes batch sizes, eliding the middle of a long list.
func describeSizes(sizes []int) string {
	parts := make([]string, len(sizes))
	for i, n := range sizes {
		parts[i] = fmt.Sprint(n)
	}
	if len(parts) > 6 {
		parts = append(append(parts[:3:3], "..."), parts[len(parts)-2:]...)
	}
	return strings.Join(parts, ", ")
}

func sum(ns []int) (s int) {
	for _, n := range ns {
		s += n
	}
	return s
}

// short rounds a duration for a sentence: milliseconds below a second,
// tenths of seconds above.
func short(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Microsecond * 100)
	}
	return d.Round(100 * time.Millisecond)
}
