package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Outcomes of one case.
const (
	Unavailable = "unavailable" // the model did not load or warm up
	Pass        = "pass"        // served, and every output matches
	Fail        = "fail"        // served, and an output differs
	Error       = "error"       // served, but the request failed or the test data could not be sent
)

// Result is one case's outcome; Reason says why when it is not Pass.
type Result struct {
	Name    string
	Outcome string
	Reason  string
}

// Check asks the server at base whether c's model is ready and, when it
// is, sends its test data and compares the outputs.
func Check(client *http.Client, base string, c Case) Result {
	r := Result{Name: c.Name}
	code, body, _, err := do(client, http.MethodGet, base+"/v2/models/"+c.Name+"/ready", nil, nil)
	switch {
	case err != nil:
		r.Outcome, r.Reason = Error, err.Error()
		return r
	case code != http.StatusOK:
		r.Outcome, r.Reason = Unavailable, fmt.Sprintf("%d %s", code, errorText(body))
		return r
	}
	if err := run(client, base, c); err != nil {
		r.Outcome, r.Reason = outcomeOf(err), err.Error()
		return r
	}
	r.Outcome = Pass
	return r
}

// mismatch marks a Compare failure: the server answered, wrongly.
type mismatch struct{ error }

func outcomeOf(err error) string {
	if _, ok := err.(mismatch); ok {
		return Fail
	}
	return Error
}

// run sends c's inputs and compares the outputs.
func run(client *http.Client, base string, c Case) error {
	md, err := metadata(client, base, c.Name)
	if err != nil {
		return err
	}
	var inputs []tensor.Tensor
	for i, p := range c.Inputs {
		t, err := ReadTensor(p)
		if err != nil {
			return err
		}
		if t.Name == "" && i < len(md.Inputs) {
			t.Name = md.Inputs[i].Name
		}
		asDeclared(&t, specTypes(md.Inputs))
		inputs = append(inputs, t)
	}
	body, n, err := BinaryRequest(inputs)
	if err != nil {
		return err
	}
	code, resp, hdr, err := do(client, http.MethodPost, base+"/v2/models/"+c.Name+"/infer", body,
		map[string]string{HeaderLength: fmt.Sprint(n)})
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("infer: %d %s", code, errorText(resp))
	}
	outs, err := ParseBinaryResponse(resp, hdr.Get(HeaderLength))
	if err != nil {
		return err
	}
	return compareOutputs(c, md, outs)
}

func compareOutputs(c Case, md tensor.Metadata, outs []tensor.Tensor) error {
	for i, p := range c.Outputs {
		want, err := ReadTensor(p)
		if err != nil {
			return err
		}
		if want.Name == "" && i < len(md.Outputs) {
			want.Name = md.Outputs[i].Name
		}
		asDeclared(&want, specTypes(md.Outputs))
		k := slicesIndex(outs, want.Name)
		if k < 0 {
			return fmt.Errorf("output %q missing from the response", want.Name)
		}
		if err := Compare(outs[k], want); err != nil {
			return mismatch{err}
		}
	}
	return nil
}

func slicesIndex(ts []tensor.Tensor, name string) int {
	for i := range ts {
		if ts[i].Name == name {
			return i
		}
	}
	return -1
}

func metadata(client *http.Client, base, name string) (tensor.Metadata, error) {
	var md tensor.Metadata
	code, body, _, err := do(client, http.MethodGet, base+"/v2/models/"+name, nil, nil)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("metadata: %d %s", code, errorText(body))
	}
	if err == nil {
		err = json.Unmarshal(body, &md)
	}
	return md, err
}

func do(client *http.Client, method, url string, body []byte, hdr map[string]string) (int, []byte, http.Header, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, err
}

// errorText is a V2 error body's message, or the body.
func errorText(body []byte) string {
	var e struct{ Error string }
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	return string(body)
}

// quoted matches quoted names and paths in reasons, which differ from
// model to model and would keep alike failures apart.
var quoted = regexp.MustCompile(`"[^"]*"|'[^']*'|/[^ :;,)]+`)

// Group is one reason and the cases that gave it.
type Group struct {
	Reason string
	Names  []string
}

// GroupReasons groups the results with outcome by their reason, names and
// paths blanked out and cut at width, largest group first.
func GroupReasons(results []Result, outcome string, width int) []Group {
	by := map[string][]string{}
	for _, r := range results {
		if r.Outcome != outcome {
			continue
		}
		key := quoted.ReplaceAllString(r.Reason, "…")
		if len(key) > width {
			key = key[:width] + "…"
		}
		by[key] = append(by[key], r.Name)
	}
	groups := make([]Group, 0, len(by))
	for k, v := range by {
		groups = append(groups, Group{k, v})
	}
	sort.Slice(groups, func(i, j int) bool {
		if len(groups[i].Names) != len(groups[j].Names) {
			return len(groups[i].Names) > len(groups[j].Names)
		}
		return groups[i].Reason < groups[j].Reason
	})
	return groups
}

// Summary counts outcomes and writes the report: counts, then each
// outcome's reasons grouped (at most perGroup names shown per group).
func Summary(w io.Writer, results []Result, perGroup int) map[string]int {
	counts := map[string]int{}
	for _, r := range results {
		counts[r.Outcome]++
	}
	served := counts[Pass] + counts[Fail] + counts[Error]
	fmt.Fprintf(w, "models: %d  ready (loaded, serving): %d  unavailable: %d\n", len(results), served, counts[Unavailable])
	fmt.Fprintf(w, "test_data_set_0: pass %d  fail (wrong output) %d  error (request failed) %d\n", counts[Pass], counts[Fail], counts[Error])
	for _, outcome := range []string{Unavailable, Error, Fail} {
		groups := GroupReasons(results, outcome, 200)
		if len(groups) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s, by reason:\n", outcome)
		for _, g := range groups {
			names := g.Names
			more := ""
			if len(names) > perGroup {
				names, more = names[:perGroup], fmt.Sprintf(" (+%d more)", len(g.Names)-perGroup)
			}
			fmt.Fprintf(w, "  %4d  %s\n        %s%s\n", len(g.Names), g.Reason, strings.Join(names, " "), more)
		}
	}
	return counts
}
