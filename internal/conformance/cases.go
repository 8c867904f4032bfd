package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// DefaultDir is where Debian's libonnx-testdata puts the node tests.
const DefaultDir = "/usr/share/libonnx-testdata/data/node"

// Case is one node test: a model and its first test data set.
type Case struct {
	Name    string   // model name in the config: the directory, sanitised
	Model   string   // path of model.onnx
	Inputs  []string // test_data_set_0/input_N.pb, in N order
	Outputs []string // test_data_set_0/output_N.pb, in N order
}

// badNameChars are what model names may not contain (see the config's
// models[].name: letters, digits, '_', '.', '-').
var badNameChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)

// Cases lists the node tests under dir (each subdirectory with a
// model.onnx), sorted by name; filter, if not nil, keeps those whose name
// it matches.
func Cases(dir string, filter *regexp.Regexp) ([]Case, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read node tests %q (install Debian's libonnx-testdata): %w", dir, err)
	}
	var cases []Case
	for _, e := range entries {
		model := filepath.Join(dir, e.Name(), "model.onnx")
		if _, err := os.Stat(model); err != nil || (filter != nil && !filter.MatchString(e.Name())) {
			continue
		}
		set := filepath.Join(dir, e.Name(), "test_data_set_0")
		c := Case{Name: badNameChars.ReplaceAllString(e.Name(), "_"), Model: model}
		c.Inputs = numbered(set, "input_")
		c.Outputs = numbered(set, "output_")
		cases = append(cases, c)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].Name < cases[j].Name })
	return cases, nil
}

// numbered returns dir/prefixN.pb for N = 0, 1, ... while they exist.
func numbered(dir, prefix string) []string {
	var out []string
	for i := 0; ; i++ {
		p := filepath.Join(dir, fmt.Sprintf("%s%d.pb", prefix, i))
		if _, err := os.Stat(p); err != nil {
			return out
		}
		out = append(out, p)
	}
}

// ConfigModels is the models: section listing every case, with the
// warm-up file warmups names for it, if any.
func ConfigModels(cases []Case, warmups map[string]string) string {
	var b strings.Builder
	b.WriteString("models:\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "  - {name: %s, path: %q", c.Name, c.Model)
		if w, ok := warmups[c.Name]; ok {
			fmt.Fprintf(&b, ", warmup: %q", w)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// WriteWarmups writes, for each case whose inputs a JSON request can carry,
// its test_data_set_0 inputs as a warm-up request file dir/NAME.json, and
// returns name -> file. Cases it cannot write keep the zero warm-up.
func WriteWarmups(cases []Case, dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, c := range cases {
		var inputs []tensor.Tensor
		ok := len(c.Inputs) > 0
		for _, p := range c.Inputs {
			t, err := ReadTensor(p)
			if err != nil || t.Name == "" {
				ok = false
				break
			}
			inputs = append(inputs, t)
		}
		if !ok {
			continue
		}
		declared := modelInputTypes(c.Model)
		for i := range inputs {
			asDeclared(&inputs[i], declared)
		}
		body, err := WarmupJSON(inputs)
		if err != nil {
			continue
		}
		path := filepath.Join(dir, c.Name+".json")
		if err := os.WriteFile(path, body, 0o644); err != nil {
			return nil, err
		}
		out[c.Name] = path
	}
	return out, nil
}
