package status

import (
	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/poison"
	"github.com/supervisor-dev/supervisor/internal/respcache"
	"github.com/supervisor-dev/supervisor/internal/tracing"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// Scrape is everything /metrics is made of, taken at once by the master.
type Scrape struct {
	Header shm.Header
	Slots  []shm.SlotSnapshot
	// Totals are the counters of every worker process this master ran:
	// retired ones plus the live slots.
	Totals Totals
	Status control.Status
	Ops    OpCounts
	LB     []lb.BackendStats
	GPUs   []affinity.GPUUsage
	Bodies BodyCounts
	// Caches are the response caches' counters by model (none without
	// response_cache).
	Caches map[string]respcache.Stats
	// Poison is the poison quarantine's counts by model.
	Poison poison.Stats
	// Tracing is the master's span counts; nil while tracing is off.
	Tracing *tracing.Stats
}

// tritonLabels are the model and version labels of Triton's nv_* series
// for a served model: a version of a model with a versions list is served
// as "name@v" (internal/v2 ServedName) and labelled model="name",
// version="v", as Triton labels it; a model of one file is version "1".
func tritonLabels(served string) (model, version string) { return v2.SplitServedName(served) }

// MetricsText renders a Scrape in the Prometheus text format: Triton's
// nv_* series where Triton has one, supervisor_* for the rest.
func MetricsText(s Scrape) []byte {
	var p promText
	writeTriton(&p, s)
	writeGPUs(&p, s.GPUs)
	writeWorkers(&p, s)
	writeStages(&p, s)
	writeLB(&p, s.LB)
	writeArenaMetrics(&p, s)
	writeBodies(&p, s.Bodies)
	writeCaches(&p, s.Caches)
	writePoison(&p, s.Poison)
	writeTracing(&p, s.Tracing)
	return p.buf.Bytes()
}

func writeTriton(p *promText, s Scrape) {
	names := s.Totals.modelNames()
	type counter struct {
		name, help string
		value      func(*shm.ModelSnapshot) float64
	}
	us := func(d interface{ Microseconds() int64 }) float64 { return float64(d.Microseconds()) }
	counters := []counter{
		{"nv_inference_request_success", "Number of successful inference requests, all batch sizes",
			func(m *shm.ModelSnapshot) float64 { return float64(m.Success) }},
		{"nv_inference_count", "Number of inferences performed (rows; a batch of 8 counts 8)",
			func(m *shm.ModelSnapshot) float64 { return float64(m.Inferences) }},
		{"nv_inference_exec_count", "Number of model executions performed (batches)",
			func(m *shm.ModelSnapshot) float64 { return float64(m.Executions) }},
		{"nv_inference_request_duration_us", "Cumulative duration of successful inference requests in the prep stage, in microseconds",
			func(m *shm.ModelSnapshot) float64 { return us(m.RequestTime) }},
		{"nv_inference_queue_duration_us", "Cumulative time requests waited in the batcher queue, in microseconds",
			func(m *shm.ModelSnapshot) float64 { return us(m.QueueTime) }},
		{"nv_inference_compute_input_duration_us", "Cumulative compute input duration (batch concatenation), in microseconds",
			func(m *shm.ModelSnapshot) float64 { return us(m.ComputeInput) }},
		{"nv_inference_compute_infer_duration_us", "Cumulative compute inference duration (the model run), in microseconds",
			func(m *shm.ModelSnapshot) float64 { return us(m.ComputeInfer) }},
		{"nv_inference_compute_output_duration_us", "Cumulative compute output duration (splitting the batch), in microseconds",
			func(m *shm.ModelSnapshot) float64 { return us(m.ComputeOut) }},
	}
	for i, c := range counters {
		p.family(c.name, "counter", c.help)
		for _, n := range names {
			model, version := tritonLabels(n)
			p.sample(c.name, c.value(s.Totals.models[n]), "model", model, "version", version)
		}
		if i == 0 {
			p.family("nv_inference_request_failure", "counter", "Number of failed inference requests, all batch sizes, by reason (REJECTED: overloaded, 503; BACKEND: the run failed; CANCELED; OTHER: invalid input and the rest)")
			for _, n := range names {
				model, version := tritonLabels(n)
				for _, f := range shm.Failures() {
					p.sample("nv_inference_request_failure", float64(s.Totals.models[n].Failures[f]), "model", model, "reason", f.String(), "version", version)
				}
			}
		}
	}
}

func writeGPUs(p *promText, gpus []affinity.GPUUsage) {
	if len(gpus) == 0 {
		return
	}
	p.family("nv_gpu_utilization", "gauge", "GPU utilization rate [0.0 - 1.0)")
	for _, g := range gpus {
		p.sample("nv_gpu_utilization", float64(g.UtilizationPercent)/100, "gpu_uuid", g.UUID)
	}
	p.family("nv_gpu_memory_total_bytes", "gauge", "GPU total memory, in bytes")
	for _, g := range gpus {
		p.sample("nv_gpu_memory_total_bytes", float64(g.MemoryTotalBytes), "gpu_uuid", g.UUID)
	}
	p.family("nv_gpu_memory_used_bytes", "gauge", "GPU used memory, in bytes")
	for _, g := range gpus {
		p.sample("nv_gpu_memory_used_bytes", float64(g.MemoryUsedBytes), "gpu_uuid", g.UUID)
	}
}

// writeWorkers: worker processes by state, then writePositions and
// writeOps.
func writeWorkers(p *promText, s Scrape) {
	type key struct{ role, state string }
	states := map[key]int{}
	for _, role := range []string{"prep", "infer"} {
		for _, st := range []shm.State{shm.Starting, shm.Ready, shm.Draining, shm.Stopping} {
			states[key{role, st.String()}] = 0
		}
	}
	for _, sl := range s.Slots {
		if sl.State != shm.Free && sl.State != shm.Dead && sl.Role != "" {
			states[key{sl.Role, sl.State.String()}]++
		}
	}
	p.family("supervisor_workers", "gauge", "Worker processes by role and state (a recycle or reload briefly runs two per position)")
	for _, role := range []string{"prep", "infer"} {
		for _, st := range []shm.State{shm.Starting, shm.Ready, shm.Draining, shm.Stopping} {
			p.sample("supervisor_workers", float64(states[key{role, st.String()}]), "role", role, "state", st.String())
		}
	}
	writePositions(p, s)
	writeOps(p, s)
	writeAutoscale(p, s)
}

// writePositions: restarts, recycles and degraded positions per pool.
func writePositions(p *promText, s Scrape) {
	restarts, recycles, degraded := map[string]int{"prep": 0, "infer": 0}, map[string]int{"prep": 0, "infer": 0}, map[string]int{"prep": 0, "infer": 0}
	for _, w := range s.Status.Workers {
		restarts[w.Role] += w.Restarts
		recycles[w.Role] += w.Recycles
		if w.State == control.StateDegraded {
			degraded[w.Role]++
		}
	}
	for _, f := range []struct {
		name, typ, help string
		v               map[string]int
	}{
		{"supervisor_worker_restarts_total", "counter", "Unexpected worker exits that were restarted, by pool", restarts},
		{"supervisor_worker_recycles_total", "counter", "Surge-first worker replacements (max_requests, max_rss_bytes, max_lifetime, reloads), by pool", recycles},
		{"supervisor_workers_degraded", "gauge", "Worker positions whose boots keep failing, by pool", degraded},
	} {
		p.family(f.name, f.typ, f.help)
		for _, role := range []string{"prep", "infer"} {
			p.sample(f.name, float64(f.v[role]), "role", role)
		}
	}
}

// writeOps: reloads, upgrades, the generation, readiness, scoreboard
// faults and each model's readiness.
func writeOps(p *promText, s Scrape) {
	p.family("supervisor_reloads_total", "counter", "Config reloads by outcome, since this master started")
	p.sample("supervisor_reloads_total", float64(s.Ops.ReloadOK), "outcome", "ok")
	p.sample("supervisor_reloads_total", float64(s.Ops.ReloadFailed), "outcome", "failed")
	p.family("supervisor_upgrades_total", "counter", "Binary upgrades by outcome, since this master started")
	p.sample("supervisor_upgrades_total", float64(s.Ops.UpgradeOK), "outcome", "ok")
	p.sample("supervisor_upgrades_total", float64(s.Ops.UpgradeFailed), "outcome", "failed")
	p.family("supervisor_last_reload_success", "gauge", "1 if the last reload succeeded, 0 if it failed; absent before the first")
	if r := s.Status.LastReload; r != nil {
		p.sample("supervisor_last_reload_success", b2f(r.OK))
	}
	p.family("supervisor_generation", "gauge", "Config generation the master serves")
	p.sample("supervisor_generation", float64(s.Status.Generation))
	p.family("supervisor_ready", "gauge", "1 while every pool has a serving worker")
	p.sample("supervisor_ready", b2f(s.Status.Ready))
	p.family("supervisor_scoreboard_faults_total", "counter",
		"Times the scoreboard was found damaged (truncated under the master) and recreated; worker counters since the last good read are lost")
	p.sample("supervisor_scoreboard_faults_total", float64(s.Status.ScoreboardFaults))
	p.family("supervisor_model_ready", "gauge", "1 while an infer worker serves the model, 0 when it failed to load or warm up (see supervisor status for why)")
	for _, st := range s.Status.Models {
		p.sample("supervisor_model_ready", b2f(st.Ready), "model", st.Name)
	}
}

// writeStages: per-pool requests, in flight, queue depth and histograms.
func writeStages(p *promText, s Scrape) {
	inflight, queue := map[string]int64{}, map[string]int64{}
	for _, sl := range s.Slots {
		if sl.State != shm.Free && sl.State != shm.Dead {
			inflight[sl.Role] += sl.InFlight
			queue[sl.Role] += sl.QueueDepth
		}
	}
	roles := []string{"prep", "infer"}
	p.family("supervisor_requests_total", "counter", "Inference requests finished by a pool's workers")
	for _, r := range roles {
		p.sample("supervisor_requests_total", float64(s.Totals.Role(r).Requests), "role", r)
	}
	p.family("supervisor_request_errors_total", "counter", "Inference requests a pool's workers answered with a status of 400 or more")
	for _, r := range roles {
		p.sample("supervisor_request_errors_total", float64(s.Totals.Role(r).Errors), "role", r)
	}
	p.family("supervisor_inflight_requests", "gauge", "Requests in flight in a pool's workers")
	for _, r := range roles {
		p.sample("supervisor_inflight_requests", float64(inflight[r]), "role", r)
	}
	p.family("supervisor_queue_depth", "gauge", "Requests waiting in the infer workers' batcher queues")
	p.sample("supervisor_queue_depth", float64(queue["infer"]), "role", "infer")
	p.family("supervisor_request_duration_seconds", "histogram", "Latency of inference requests in a pool's workers (prep: the whole pipeline after the lb)")
	for _, r := range roles {
		p.histogram("supervisor_request_duration_seconds", s.Totals.Role(r).Latency, "role", r)
	}
	p.family("supervisor_queue_duration_seconds", "histogram", "Time requests waited in the infer workers' batcher queues")
	p.histogram("supervisor_queue_duration_seconds", s.Totals.Role("infer").QueueTime, "role", "infer")
	p.family("supervisor_batch_size", "histogram", "Rows per model run in the infer workers")
	p.histogram("supervisor_batch_size", s.Totals.Role("infer").BatchSize, "role", "infer")
}

func writeLB(p *promText, stats []lb.BackendStats) {
	p.family("supervisor_lb_inflight", "gauge", "Requests the master's lb has in flight on each prep worker process")
	for _, b := range stats {
		p.sample("supervisor_lb_inflight", float64(b.InFlight), "backend", b.Name)
	}
	p.family("supervisor_lb_requests_total", "counter", "Dispatches of the master's lb to each prep worker process it still knows")
	for _, b := range stats {
		p.sample("supervisor_lb_requests_total", float64(b.Requests), "backend", b.Name)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// BodyCounts are what the master did with request bodies: bytes read from
// clients and prefix checks (supervisor/front precheck.go) by outcome.
type BodyCounts struct {
	Read                                    int64
	ChecksPassed, ChecksRefused, ChecksNone int64
	// ClientClosed counts proxied requests whose client hung up before
	// the answer: their worker exchange was abandoned (nginx's 499).
	ClientClosed int64
	// PoisonFallbackKeys counts abandoned requests remembered for the
	// poison quarantine by their bytes as sent, not their decoded
	// tensors, because limits.poison_key_rate was spent (or is 0).
	PoisonFallbackKeys int64
	// AnswersRefused counts workers' answers the master dropped because
	// they did not fit limits.max_body_bytes_in_flight (answered 503, or
	// 500 over seven eighths of it), most unread: refused from their
	// header.
	AnswersRefused int64
	// RateLimitFallbacks counts rate-limit decisions that
	// auth.rate_limit_redis did not answer (failed, slower than 20ms, or
	// paused for a second after a failure), taken on the master's own
	// bucket for the key instead.
	RateLimitFallbacks int64
}

// writeBodies writes the body counters.
func writeBodies(p *promText, b BodyCounts) {
	p.family("supervisor_body_bytes_read_total", "counter", "Request body bytes the master read from clients")
	p.sample("supervisor_body_bytes_read_total", float64(b.Read))
	p.family("supervisor_prefix_checks_total", "counter", "Prefix checks of large bodies by outcome: passed, refused (answered from the first bytes), unanswered (the body went on)")
	p.sample("supervisor_prefix_checks_total", float64(b.ChecksPassed), "outcome", "passed")
	p.sample("supervisor_prefix_checks_total", float64(b.ChecksRefused), "outcome", "refused")
	p.sample("supervisor_prefix_checks_total", float64(b.ChecksNone), "outcome", "unanswered")
	p.family("supervisor_client_closed_requests_total", "counter", "Proxied requests whose client closed its connection (or cancelled its RPC) before the answer: their worker exchange was abandoned, nothing answered (nginx's 499)")
	p.sample("supervisor_client_closed_requests_total", float64(b.ClientClosed))
	p.family("supervisor_answers_refused_total", "counter", "Workers' answers the master dropped, most before reading them, because they did not fit limits.max_body_bytes_in_flight: answered 503 (500 when over 7/8 of it)")
	p.sample("supervisor_answers_refused_total", float64(b.AnswersRefused))
	p.family("supervisor_poison_fallback_keys_total", "counter", "Abandoned requests keyed for the poison quarantine by their bytes as sent, not their decoded tensors, because limits.poison_key_rate was spent")
	p.sample("supervisor_poison_fallback_keys_total", float64(b.PoisonFallbackKeys))
	p.family("supervisor_rate_limit_fallbacks_total", "counter", "Rate-limit decisions auth.rate_limit_redis did not answer (failed, slower than 20ms, or paused a second after a failure), taken on this master's own bucket for the key")
	p.sample("supervisor_rate_limit_fallbacks_total", float64(b.RateLimitFallbacks))
}
