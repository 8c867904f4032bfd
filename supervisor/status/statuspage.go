package status

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// Page renders the live status page: the Report as tables (the
// structs `supervisor status` prints: models, workers, arenas, pools, GPUs)
// and the request rate and p99 latency of the last minutes as an inline
// SVG chart. Everything in it is HTML-escaped (html/template): a model's
// unavailability reason is ONNX Runtime's text or a file path.
// It refreshes itself and references nothing outside itself (no scripts,
// styles or fonts from elsewhere), so it works on an air-gapped host.
func Page(r *Report, pts []RatePoint) []byte {
	var buf bytes.Buffer
	if err := statusTemplate.Execute(&buf, pageData{R: r, Chart: newChart(pts), Arenas: withArena(r.Processes)}); err != nil {
		return []byte("status page: " + template.HTMLEscapeString(err.Error()))
	}
	return buf.Bytes()
}

type pageData struct {
	R     *Report
	Chart chart
	// Arenas are the processes with a shared-memory arena (prep workers
	// under handoff: shm), as the text report's ARENA table lists them.
	Arenas []ProcessRow
}

func withArena(rows []ProcessRow) []ProcessRow {
	var out []ProcessRow
	for _, p := range rows {
		if p.Arena != nil {
			out = append(out, p)
		}
	}
	return out
}

// chart is the SVG's geometry: polylines in a chartW x chartH box.
type chart struct {
	RatePoints, P99Points string
	MaxRate, MaxP99       string
	LastRate, LastP99     string
	Span                  string
	Empty                 bool
}

const chartW, chartH = 600.0, 150.0

// newChart derives rate and p99 between consecutive points.
func newChart(pts []RatePoint) chart {
	type xy struct{ t, rate, p99 float64 }
	var series []xy
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		dt := b.At.Sub(a.At).Seconds()
		if dt <= 0 || b.Requests < a.Requests {
			continue
		}
		d := subHistogram(b.Latency, a.Latency)
		series = append(series, xy{b.At.Sub(pts[0].At).Seconds(), float64(b.Requests-a.Requests) / dt, quantile(d, 0.99)})
	}
	c := chart{Empty: len(series) == 0, Span: (time.Duration(len(pts)) * ChartStep).String()}
	if c.Empty {
		return c
	}
	maxT, maxRate, maxP99 := max(series[len(series)-1].t, 1), 1e-9, 1e-9
	for _, s := range series {
		maxRate, maxP99 = max(maxRate, s.rate), max(maxP99, s.p99)
	}
	var rate, p99 strings.Builder
	for _, s := range series {
		x := s.t / maxT * chartW
		fmt.Fprintf(&rate, "%.1f,%.1f ", x, chartH-s.rate/maxRate*(chartH-10))
		fmt.Fprintf(&p99, "%.1f,%.1f ", x, chartH-s.p99/maxP99*(chartH-10))
	}
	last := series[len(series)-1]
	c.RatePoints, c.P99Points = rate.String(), p99.String()
	c.MaxRate, c.MaxP99 = fmt.Sprintf("%.1f/s", maxRate), latency(maxP99)
	c.LastRate, c.LastP99 = fmt.Sprintf("%.1f/s", last.rate), latency(last.p99)
	return c
}

// subHistogram returns b - a, bucket by bucket (b is the later one).
func subHistogram(b, a shm.Histogram) shm.Histogram {
	d := shm.Histogram{Bounds: b.Bounds, Counts: append([]uint64(nil), b.Counts...), Sum: b.Sum - a.Sum}
	for i := range d.Counts {
		if i < len(a.Counts) && a.Counts[i] <= d.Counts[i] {
			d.Counts[i] -= a.Counts[i]
		}
	}
	return d
}

var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"bytes":   bytesIEC,
	"seconds": seconds,
	"latency": latency,
	"since":   since,
	"pct":     func(f float64) string { return fmt.Sprintf("%.0f", f) },
	"why":     control.ModelState.Why,
	"fullFor": (*ArenaRow).fullFor,
	"full":    (*ArenaRow).full,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="2">
<title>supervisor status</title>
<style>
body{font:13px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}
h1{font-size:18px;margin:0 0 .3em} h2{font-size:15px;margin:1.2em 0 .3em}
table{border-collapse:collapse} th,td{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}
th{background:#eef;position:sticky;top:0} td.l,th.l{text-align:left}
.bad{color:#b00;font-weight:bold} .warn{color:#c60} .ok{color:#070} .stale{color:#999}
.legend span{display:inline-block;margin-right:1.5em}
</style></head><body>
<h1>supervisor {{.R.Version}} &mdash; master pid {{.R.PID}},
{{if .R.Stopping}}<span class="bad">stopping ({{.R.Stopping}})</span>{{else if .R.Ready}}<span class="ok">ready</span>{{else}}<span class="bad">not ready</span>{{end}},
generation {{.R.Generation}}, listening on {{.R.Listen}}, up {{since .R.At .R.Started}}</h1>
<div>taken {{.R.At.Format "2006-01-02 15:04:05"}}; refreshes every 2s.
{{with .R.LastReload}} Last reload: {{if .OK}}<span class="ok">ok</span>{{else}}<span class="bad">FAILED: {{.Error}}</span>{{end}} ({{.Took}}).{{end}}
{{with .R.LastUpgrade}} Last upgrade: {{if .OK}}<span class="ok">ok</span>{{else}}<span class="bad">FAILED: {{.Error}}</span>{{end}} ({{.Took}}).{{end}}
{{with .R.ScoreboardError}}<div class="bad">SCOREBOARD DAMAGED {{$.R.ScoreboardFaults}} time(s), recreated; last: {{.}}</div>{{end}}
{{range .R.Warnings}}<div class="bad">WARNING: {{.}}</div>{{end}}
{{with .R.Degraded}}<div class="bad">DEGRADED (boots keep failing): {{range .}}{{.}} {{end}}</div>{{end}}
{{range $w := .R.Workers}}{{with $w.LastReplacement}}{{if eq .Mode "drain-first"}}<div>{{$w.Name}}: last replaced drain-first {{since $.R.At .At}} ago ({{.Reason}}): its GPU had no memory for both ({{.Why}})</div>{{end}}{{end}}{{end}}
{{with .R.Autoscale}}<div>Prep autoscale: {{.Workers}} workers (min {{.Min}}, max {{.Max}}), {{.Ups}} up, {{.Downs}} down{{with .Last}}; last {{.Direction}} {{.From}} &rarr; {{.To}}, {{since $.R.At .At}} ago: {{.Reason}}{{with .Error}} <span class="bad">FAILED: {{.}}</span>{{end}}{{end}}</div>{{end}}
</div>
<h2>Bottleneck: {{.R.Bottleneck}}</h2>

<h2>Requests (prep stage) over the last {{.Chart.Span}}</h2>
{{if .Chart.Empty}}<p>collecting&hellip; (a point every 5s)</p>{{else}}
<div class="legend"><span style="color:#06c">&#9632; rate, now {{.Chart.LastRate}} (top {{.Chart.MaxRate}})</span>
<span style="color:#c60">&#9632; p99 latency, now {{.Chart.LastP99}} (top {{.Chart.MaxP99}})</span></div>
<svg width="600" height="150" viewBox="0 0 600 150" style="border:1px solid #ccc;background:#fafafa">
<polyline fill="none" stroke="#06c" stroke-width="2" points="{{.Chart.RatePoints}}"/>
<polyline fill="none" stroke="#c60" stroke-width="2" points="{{.Chart.P99Points}}"/>
</svg>{{end}}

<h2>Models</h2>
{{if .R.Models}}<table id="models"><tr><th class="l">model</th><th class="l">state</th><th class="l">reason</th><th class="l">identity</th></tr>
{{range .R.Models}}{{if .Ready}}<tr><td class="l">{{.Name}}</td><td class="l ok">ready</td><td class="l">{{with .Warning}}<span class="warn">WARNING: {{.}}</span>{{else}}-{{end}}</td><td class="l">{{or .Identity "-"}}</td></tr>
{{else}}<tr class="bad"><td class="l">{{.Name}}</td><td class="l">UNAVAILABLE</td><td class="l">{{why .}}</td><td class="l">{{or .Identity "-"}}</td></tr>
{{end}}{{end}}</table>{{else}}<p>none reported{{if .R.ControlError}} (the master did not answer on its control socket){{end}}</p>{{end}}

<h2>Pools</h2>
<table id="pools"><tr><th class="l">pool</th><th>processes</th><th>ready</th><th>requests</th><th>in flight</th><th>queue</th><th>errors</th><th>RSS</th><th>CPU%</th></tr>
{{range .R.Pools}}<tr><td class="l">{{.Role}}</td><td>{{.Processes}}</td><td>{{.Ready}}</td><td>{{.Requests}}</td><td>{{.InFlight}}</td><td>{{.Queue}}</td><td>{{.Errors}}</td><td>{{bytes .RSSBytes}}</td><td>{{pct .CPUPercent}}</td></tr>
{{end}}</table>

<h2>Workers</h2>
<table id="workers"><tr><th>gen</th><th class="l">role</th><th class="l">worker</th><th>pid</th><th class="l">device</th><th class="l">cpus</th><th class="l">state</th><th>uptime</th><th>requests</th><th>in flight</th><th>queue</th><th>errors</th><th>RSS</th><th>CPU%</th><th>p99</th><th>restarts</th><th>recycle at</th></tr>
{{range .R.Processes}}<tr{{if .Stale}} class="stale"{{end}}><td>{{.Generation}}</td><td class="l">{{.Role}}</td><td class="l">{{.Name}}</td><td>{{.PID}}</td><td class="l">{{.Device}}</td><td class="l">{{.CPUs}}</td><td class="l">{{.State}}</td><td>{{seconds .UptimeS}}</td><td>{{.Requests}}</td><td>{{.InFlight}}</td><td>{{.Queue}}</td><td>{{.Errors}}</td><td>{{bytes .RSSBytes}}</td><td>{{pct .CPUPercent}}</td><td>{{latency .LatencyP99S}}</td><td>{{.Restarts}}</td><td>{{if .RecycleAt}}{{.RecycleAt}}{{else}}-{{end}}</td></tr>
{{end}}</table>

{{if .Arenas}}<h2>Prep shared-memory arenas</h2>
<table id="arenas"><tr><th class="l">worker</th><th>pid</th><th>slots in use</th><th>full for</th><th>turned away</th></tr>
{{range .Arenas}}<tr{{if full .Arena}} class="bad"{{end}}><td class="l">{{.Name}}</td><td>{{.PID}}</td><td>{{.Arena.InUse}}/{{.Arena.Slots}}</td><td>{{fullFor .Arena}}</td><td>{{.Arena.TurnedAway}}</td></tr>
{{end}}</table>{{end}}

<h2>GPUs</h2>
{{if .R.GPUs}}<table><tr><th>index</th><th class="l">name</th><th>utilisation %</th><th>memory used</th><th>memory total</th></tr>
{{range .R.GPUs}}<tr><td>{{.Index}}</td><td class="l">{{.Name}}</td><td>{{.UtilizationPercent}}</td><td>{{bytes .MemoryUsedBytes}}</td><td>{{bytes .MemoryTotalBytes}}</td></tr>
{{end}}</table>{{else}}<p>none (no NVML on this host)</p>{{end}}
<p>Machine-readable: <a href="/status.json">/status.json</a>, <a href="/metrics">/metrics</a>.</p>
</body></html>
`))
