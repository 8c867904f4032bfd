package tracing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Triton's trace setting keys.
const (
	KeyLevel        = "trace_level"
	KeyRate         = "trace_rate"
	KeyCount        = "trace_count"
	KeyLogFrequency = "log_frequency"
	KeyFile         = "trace_file"
	KeyMode         = "trace_mode"
)

// Keys are the settings a POST may name.
var Keys = []string{KeyLevel, KeyRate, KeyCount, KeyLogFrequency, KeyFile, KeyMode}

// Mode is the one trace_mode served.
const Mode = "opentelemetry"

// The trace levels served: Triton's OFF and TIMESTAMPS (TENSORS is not).
const (
	LevelOff        = "OFF"
	LevelTimestamps = "TIMESTAMPS"
)

// Settings are one scope's trace settings (the global ones, or a model's
// with its overrides applied), as Triton names them.
type Settings struct {
	// Level is LevelOff or LevelTimestamps.
	Level string
	// Rate samples one request in Rate; at least 1.
	Rate uint64
	// Count is how many more requests may be traced; -1: no bound.
	Count int64
	// LogFrequency is Triton's trace-file flush frequency: kept and
	// answered for Triton's clients; spans are exported in batches, never
	// to a file, so it changes nothing (as in Triton's OpenTelemetry mode).
	LogFrequency uint64
}

// Defaults are Triton's: OFF, one in 1000, no bound, 0.
func Defaults() Settings { return Settings{Level: LevelOff, Rate: 1000, Count: -1} }

// Sampler holds the global and per-model trace settings in force and
// decides which requests are traced. Its settings change at run time
// (Update); Sample reads them without a lock.
type Sampler struct {
	mu   sync.Mutex // serialises Update
	snap atomic.Pointer[snapshot]
}

// snapshot is the settings in force, never changed once stored.
type snapshot struct {
	global    *scope
	overrides map[string]*override
	models    map[string]*scope // each overridden model's effective scope
}

// scope is one effective scope. seen and count are shared with whoever
// defines them: a model without its own trace_rate counts its requests
// with the global ones, as Triton does.
type scope struct {
	level        string
	rate         uint64
	logFrequency uint64
	seen         *atomic.Uint64
	count        *atomic.Int64
}

// override is a model's own settings; nil fields follow the global ones.
type override struct {
	level        *string
	rate         *uint64
	logFrequency *uint64
	seen         *atomic.Uint64 // with rate
	count        *atomic.Int64  // nil: the global count
}

// NewSampler starts with global settings s and no model overrides.
func NewSampler(s Settings) *Sampler {
	g := &scope{level: s.Level, rate: s.Rate, logFrequency: s.LogFrequency, seen: new(atomic.Uint64), count: new(atomic.Int64)}
	g.count.Store(s.Count)
	sm := &Sampler{}
	sm.snap.Store(&snapshot{global: g})
	return sm
}

// Sample reports whether the next request of model is traced: its
// scope's level is TIMESTAMPS, it is the rate-th request since the last
// one sampled, and the count is not spent (which it then decrements).
func (sm *Sampler) Sample(model string) bool {
	snap := sm.snap.Load()
	sc := snap.global
	if snap.models != nil {
		if m, ok := snap.models[model]; ok {
			sc = m
		}
	}
	if sc.level == LevelOff || sc.seen.Add(1)%sc.rate != 0 {
		return false
	}
	for range 64 { // bounded: a CAS fails only to another sampled request
		c := sc.count.Load()
		switch {
		case c < 0:
			return true
		case c == 0:
			return false
		case sc.count.CompareAndSwap(c, c-1):
			return true
		}
	}
	return false
}

// Get is the settings in force for model ("" for the global ones).
func (sm *Sampler) Get(model string) Settings {
	return sm.snap.Load().scope(model).settings()
}

func (snap *snapshot) scope(model string) *scope {
	if m, ok := snap.models[model]; ok && model != "" {
		return m
	}
	return snap.global
}

func (sc *scope) settings() Settings {
	return Settings{Level: sc.level, Rate: sc.rate, Count: sc.count.Load(), LogFrequency: sc.logFrequency}
}

// JSON is Triton's answer for the settings of model ("": global):
// trace_level a list, the others strings.
func (sm *Sampler) JSON(model string) []byte {
	s := sm.Get(model)
	b, _ := json.Marshal(map[string]any{
		KeyLevel:        []string{s.Level},
		KeyRate:         strconv.FormatUint(s.Rate, 10),
		KeyCount:        strconv.FormatInt(s.Count, 10),
		KeyLogFrequency: strconv.FormatUint(s.LogFrequency, 10),
		KeyFile:         "",
		KeyMode:         Mode,
	})
	return b
}

// Update applies a POST's body, a JSON object of some of Keys, to model's
// settings ("": the global ones), all or none. A value is a string, a
// list of strings (trace_level's list), or, for a model, null or an empty
// list, which clears the model's own value so it follows the global one.
// It returns why a body was refused, for a 400.
func (sm *Sampler) Update(model string, body []byte) error {
	var posted map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&posted); err != nil || posted == nil || d.More() {
		return fmt.Errorf("the body is not a JSON object of trace settings (%s)", strings.Join(Keys, ", "))
	}
	names := slices.Sorted(maps.Keys(posted))
	vals := make(map[string]*string, len(names)) // nil: cleared
	for _, k := range names {
		v, err := parseValue(k, posted[k])
		if err != nil {
			return err
		}
		if v == nil && model == "" {
			return fmt.Errorf("%s: the global settings cannot be cleared (only a model's, which then follows the global one); send a value", k)
		}
		vals[k] = v
	}
	return sm.apply(model, vals)
}

// Set applies already-split values (the gRPC request's): key to its
// values, an empty list clearing a model's own value.
func (sm *Sampler) Set(model string, set map[string][]string) error {
	body := make(map[string]any, len(set))
	for k, v := range set {
		switch len(v) {
		case 0:
			body[k] = nil
		case 1:
			body[k] = v[0]
		default:
			body[k] = v
		}
	}
	b, _ := json.Marshal(body)
	return sm.Update(model, b)
}

// parseValue checks one posted value and returns it as a string (nil:
// cleared).
func parseValue(k string, raw json.RawMessage) (*string, error) {
	if !slices.Contains(Keys, k) {
		return nil, fmt.Errorf("unknown trace setting %q (the settings are %s)", k, strings.Join(Keys, ", "))
	}
	var list []string
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	var one string
	var n json.Number
	switch {
	case json.Unmarshal(raw, &one) == nil:
		list = []string{one}
	case json.Unmarshal(raw, &n) == nil:
		list = []string{n.String()}
	case json.Unmarshal(raw, &list) == nil:
		if len(list) == 0 {
			return nil, nil
		}
	default:
		return nil, fmt.Errorf("%s %s: want a string or a list of strings (Triton's form, e.g. %s)", k, raw, example[k])
	}
	if k != KeyLevel && len(list) > 1 {
		return nil, fmt.Errorf("%s %s: want one value, e.g. %s", k, raw, example[k])
	}
	v := list[0]
	switch k {
	case KeyLevel:
		level := ""
		for _, l := range list {
			switch u := strings.ToUpper(l); u {
			case LevelOff, LevelTimestamps:
				if level != "" && level != u {
					return nil, fmt.Errorf("%s %s: OFF and TIMESTAMPS contradict each other; send one", k, raw)
				}
				level = u
			case "TENSORS":
				return nil, fmt.Errorf("%s TENSORS: tensor tracing is not served (spans carry timestamps only); use TIMESTAMPS or OFF", k)
			default:
				return nil, fmt.Errorf("%s %q: want OFF or TIMESTAMPS", k, l)
			}
		}
		v = level
	case KeyRate:
		if r, err := strconv.ParseUint(v, 10, 64); err != nil || r < 1 {
			return nil, fmt.Errorf("%s %q: want an integer of at least 1 (one request in trace_rate is traced)", k, v)
		}
	case KeyCount:
		if c, err := strconv.ParseInt(v, 10, 64); err != nil || c < -1 {
			return nil, fmt.Errorf("%s %q: want -1 (no bound) or how many more requests to trace, from 0", k, v)
		}
	case KeyLogFrequency:
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return nil, fmt.Errorf("%s %q: want an integer from 0", k, v)
		}
	case KeyFile:
		if v != "" {
			return nil, fmt.Errorf("%s %q: spans are exported over OTLP to the config's tracing.endpoint, never to a file, and a path taken from an API request would let any key holder write files as the master; send \"\" or leave trace_file out", k, v)
		}
	case KeyMode:
		if v != Mode {
			return nil, fmt.Errorf("%s %q: the one trace mode served is %q (spans over OTLP); send it or leave trace_mode out", k, v, Mode)
		}
	}
	return &v, nil
}

var example = map[string]string{
	KeyLevel: `["TIMESTAMPS"]`, KeyRate: `"1000"`, KeyCount: `"-1"`, KeyLogFrequency: `"0"`, KeyFile: `""`, KeyMode: `"opentelemetry"`,
}

// apply stores a new snapshot with vals (checked by parseValue) applied.
func (sm *Sampler) apply(model string, vals map[string]*string) error {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	old := sm.snap.Load()
	next := &snapshot{global: old.global, overrides: make(map[string]*override, len(old.overrides)+1)}
	for m, o := range old.overrides {
		c := *o
		next.overrides[m] = &c
	}
	if model == "" {
		g := *old.global
		for k, v := range vals {
			switch k {
			case KeyLevel:
				g.level = *v
			case KeyRate:
				g.rate, _ = strconv.ParseUint(*v, 10, 64)
			case KeyCount:
				c, _ := strconv.ParseInt(*v, 10, 64)
				g.count.Store(c)
			case KeyLogFrequency:
				g.logFrequency, _ = strconv.ParseUint(*v, 10, 64)
			}
		}
		next.global = &g
	} else {
		o := next.overrides[model]
		if o == nil {
			o = &override{}
			next.overrides[model] = o
		}
		for k, v := range vals {
			switch k {
			case KeyLevel:
				o.level = v
			case KeyRate:
				if v == nil {
					o.rate, o.seen = nil, nil
					continue
				}
				r, _ := strconv.ParseUint(*v, 10, 64)
				o.rate = &r
				if o.seen == nil {
					o.seen = new(atomic.Uint64)
				}
			case KeyCount:
				if v == nil {
					o.count = nil
					continue
				}
				c, _ := strconv.ParseInt(*v, 10, 64)
				o.count = new(atomic.Int64)
				o.count.Store(c)
			case KeyLogFrequency:
				if v == nil {
					o.logFrequency = nil
					continue
				}
				f, _ := strconv.ParseUint(*v, 10, 64)
				o.logFrequency = &f
			}
		}
		if *o == (override{}) {
			delete(next.overrides, model)
		}
	}
	next.models = make(map[string]*scope, len(next.overrides))
	for m, o := range next.overrides {
		next.models[m] = o.on(next.global)
	}
	sm.snap.Store(next)
	return nil
}

// on is o's effective scope over global g.
func (o *override) on(g *scope) *scope {
	sc := *g
	if o.level != nil {
		sc.level = *o.level
	}
	if o.rate != nil {
		sc.rate, sc.seen = *o.rate, o.seen
	}
	if o.count != nil {
		sc.count = o.count
	}
	if o.logFrequency != nil {
		sc.logFrequency = *o.logFrequency
	}
	return &sc
}
