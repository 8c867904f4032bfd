package status

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/supervisor-dev/supervisor/shm"
)

// promText writes the Prometheus text exposition format (version 0.0.4):
// a HELP and TYPE line per family, then its samples. The supervisor's
// series are derived from the scoreboard at Scrape time, so a small writer
// serves better than a client library's registry of live instruments.
type promText struct {
	buf bytes.Buffer
}

// family starts a metric family; typ is counter, gauge or histogram.
func (p *promText) family(name, typ, help string) {
	p.buf.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
}

// sample writes one sample; labels are name, value pairs.
func (p *promText) sample(name string, value float64, labels ...string) {
	p.buf.WriteString(name)
	p.labels(labels)
	p.buf.WriteByte(' ')
	p.buf.WriteString(strconv.FormatFloat(value, 'g', -1, 64))
	p.buf.WriteByte('\n')
}

func (p *promText) labels(labels []string) {
	if len(labels) == 0 {
		return
	}
	p.buf.WriteByte('{')
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			p.buf.WriteByte(',')
		}
		p.buf.WriteString(labels[i] + `="` + escapeLabel(labels[i+1]) + `"`)
	}
	p.buf.WriteByte('}')
}

// histogram writes a histogram's cumulative buckets, sum and count.
func (p *promText) histogram(name string, h shm.Histogram, labels ...string) {
	if len(h.Counts) == 0 {
		return
	}
	cum := h.Cumulative()
	for i, b := range h.Bounds {
		p.sample(name+"_bucket", float64(cum[i]), append(labels[:len(labels):len(labels)], "le", strconv.FormatFloat(b, 'g', -1, 64))...)
	}
	p.sample(name+"_bucket", float64(h.Count()), append(labels[:len(labels):len(labels)], "le", "+Inf")...)
	p.sample(name+"_sum", h.Sum, labels...)
	p.sample(name+"_count", float64(h.Count()), labels...)
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(v string) string { return labelEscaper.Replace(v) }
