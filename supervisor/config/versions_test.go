package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const versionsYAML = `models:
  - {name: one, path: one.onnx}
  - name: mlp
    versions:
      - {version: 1, path: v1.onnx}
      - {version: 3, path: v3.onnx}
      - {version: 2, path: v2.onnx}
`

// TestConfigVersionPolicies: a model with versions becomes one served
// model per version its policy serves, named name@v, with that version's
// path and the line of that path; latest 1 is the default; the others
// keep their place and lines.
func TestConfigVersionPolicies(t *testing.T) {
	for _, tc := range []struct{ policy, want string }{
		{"", "one mlp@3"},
		{"    version_policy: {latest: {num_versions: 2}}\n", "one mlp@2 mlp@3"},
		{"    version_policy: {latest: {num_versions: 9}}\n", "one mlp@1 mlp@2 mlp@3"},
		{"    version_policy: {all: {}}\n", "one mlp@1 mlp@2 mlp@3"},
		{"    version_policy: {specific: {versions: [3, 1]}}\n", "one mlp@1 mlp@3"},
	} {
		c := mustParseConfig(t, versionsYAML+tc.policy, "v.yaml")
		var names []string
		for _, m := range c.Models {
			names = append(names, m.Name)
			if m.Versions != nil || m.VersionPolicy != nil {
				t.Errorf("%q: %s keeps its versions or policy", tc.policy, m.Name)
			}
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("%q: served %q, want %q", tc.policy, got, tc.want)
		}
		if got := strings.Join(c.ServedNames("mlp"), " "); got != strings.TrimPrefix(tc.want, "one ") {
			t.Errorf("%q: ServedNames(mlp) = %q", tc.policy, got)
		}
		if !c.ServesModel("mlp") || strings.Join(c.ModelNames(), " ") != "one mlp" {
			t.Errorf("%q: ServesModel(mlp) %v, ModelNames %v", tc.policy, c.ServesModel("mlp"), c.ModelNames())
		}
	}
	c := mustParseConfig(t, versionsYAML+"    version_policy: {all: {}}\n", "v.yaml")
	for i, want := range map[int]string{0: "one.onnx v.yaml:2", 1: "v1.onnx v.yaml:5", 2: "v2.onnx v.yaml:7", 3: "v3.onnx v.yaml:6"} {
		if got := c.Models[i].Path + " " + c.Where("models["+string(rune('0'+i))+"].path"); got != want {
			t.Errorf("models[%d]: %q, want %q", i, got, want)
		}
	}
}

// TestConfigVersionsYAML: the effective config (`supervisor check`)
// writes a versioned model as written, one model with its versions and
// policy, which ParseConfig reads back to the same served models.
func TestConfigVersionsYAML(t *testing.T) {
	c := mustParseConfig(t, versionsYAML+"    version_policy: {specific: {versions: [1, 3]}}\n", "v.yaml")
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "mlp@") || !strings.Contains(string(out), "version_policy:") {
		t.Fatalf("YAML writes the served names, or no policy:\n%s", out)
	}
	back := mustParseConfig(t, string(out), "out.yaml")
	if got, want := back.ServedNames("mlp"), c.ServedNames("mlp"); !slices.Equal(got, want) || back.Models[2].Path != "v3.onnx" {
		t.Errorf("read back: %v %q, want %v", got, back.Models[2].Path, want)
	}
}

// TestConfigVersionErrors: each mistake in versions or version_policy is
// refused with its line and what to do.
func TestConfigVersionErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"    path: x.onnx\n    versions: [{version: 1, path: a.onnx}]\n", "v.yaml:3: models[0].path: is set with versions"},
		{"    versions: [{version: 1, path: a.onnx}, {version: 1, path: b.onnx}]\n", "v.yaml:3: models[0].versions[1].version: version 1 is listed twice, first at line 3"},
		{"    versions:\n      - {version: 2}\n", "v.yaml:4: models[0].versions[0].path: version 2 has no path"},
		{"    versions: [{version: 0, path: a.onnx}]\n", "v.yaml:3: models[0].versions[0].version: 0 is not a version"},
		{"    versions: [{version: one, path: a.onnx}]\n", `v.yaml:3: models[0].versions[0].version: "one" is not a whole number`},
		{"    versions: [{version: 1, file: a.onnx}]\n", `v.yaml:3: unknown key "file" in models[0].versions[0]`},
		{"    path: a.onnx\n    version_policy: {all: {}}\n", "v.yaml:4: models[0].version_policy: is set but the model has no versions list"},
		{"    versions: [{version: 1, path: a.onnx}]\n    version_policy: {latest: {num_versions: 0}}\n", "v.yaml:4: models[0].version_policy.latest.num_versions: 0: serve at least 1 version"},
		{"    versions: [{version: 1, path: a.onnx}]\n    version_policy: {all: {}, latest: {num_versions: 1}}\n", "v.yaml:4: models[0].version_policy: set exactly one of"},
		{"    versions: [{version: 1, path: a.onnx}]\n    version_policy: {specific: {versions: [1, 4]}}\n", "v.yaml:4: models[0].version_policy.specific.versions[1]: version 4 is not in the model's versions list (it has 1)"},
		{"    versions: [{version: 1, path: a.onnx}]\n    version_policy: {newest: {}}\n", `v.yaml:4: unknown key "newest" in models[0].version_policy`},
	} {
		_, err := ParseConfig([]byte("models:\n  - name: mlp\n"+tc.yaml), "v.yaml")
		if !errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %q", tc.yaml, err, tc.want)
		}
	}
}
