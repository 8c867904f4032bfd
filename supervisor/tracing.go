package supervisor

import (
	"context"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/tracing"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/front"
)

// tracingConfig is the exporter config every process gets from the
// config's tracing section; nil when tracing is off.
func tracingConfig(cfg *config.Config) *tracing.Config {
	t := cfg.Tracing
	if t.Endpoint == "" {
		return nil
	}
	return &tracing.Config{Endpoint: t.Endpoint, TLS: t.TLS, QueueSize: t.QueueSize, BatchSize: t.BatchSize, ExportTimeout: t.ExportTimeout.Duration}
}

// startTracing starts the master's exporter and its trace settings from
// the config; nil when tracing is off. The exporter does not wait for
// the collector. A reload cannot change the section (reloadable), so the
// master's and its workers' exporters stay alike.
func startTracing(cfg *config.Config, log zerolog.Logger) *front.Tracing {
	tc := tracingConfig(cfg)
	if tc == nil {
		return nil
	}
	tr, err := tracing.Start(*tc, "master", log)
	if err != nil {
		log.Error().Err(err).Msg("tracing is off: the exporter did not start")
		return nil
	}
	s := tracing.Settings{Level: strings.ToUpper(cfg.Tracing.Level), Rate: uint64(cfg.Tracing.Rate), Count: int64(cfg.Tracing.Count)}
	log.Info().Str("endpoint", tc.Endpoint).Str("trace_level", s.Level).Uint64("trace_rate", s.Rate).Int64("trace_count", s.Count).
		Msg("tracing: spans of sampled requests are exported over OTLP")
	return &front.Tracing{Tracer: tr, Sampler: tracing.NewSampler(s)}
}

// stopTracing exports the master's queued spans, for at most the
// export timeout, when it stops.
func stopTracing(t *front.Tracing, cfg *config.Config) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Tracing.ExportTimeout.Duration+time.Second)
	defer cancel()
	_ = t.Tracer.Shutdown(ctx)
}
