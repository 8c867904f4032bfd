package k8s_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The manifests are also checked by a real validator, kubeconform (the
// Makefile installs it from the Go module proxy into out/tools and sets
// $KUBECONFORM), against Kubernetes' JSON schemas in kubeconform's
// "standalone-strict" layout (additionalProperties false everywhere).
//
// kubeconform downloads those schemas from GitHub, which this project's
// machines cannot reach, and no package registry they reach ships them
// (npm has validators with compiled schemas, not the JSON files). The
// schemas are therefore generated here, as kubeconform's own
// openapi2jsonschema.py does, from Kubernetes' OpenAPI v2 document as
// k8s.io/kube-openapi ships it for its tests
// (pkg/schemaconv/testdata/swagger.json, Kubernetes v1.27.0: every field
// our DaemonSet, ConfigMap and Service use is GA since 1.19 or earlier),
// a module already in go.sum, so nothing beyond the Go module proxy is
// needed.

// kubeconform finds the validator: $KUBECONFORM, else out/tools, else PATH.
func kubeconform(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("KUBECONFORM"), "../../out/tools/kubeconform"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	if p, err := exec.LookPath("kubeconform"); err == nil {
		return p
	}
	t.Skip("kubeconform is not installed: `make test` installs it (GOBIN=out/tools go install github.com/yannh/kubeconform/cmd/kubeconform@v0.8.0)")
	return ""
}

// openAPIDocument is Kubernetes' swagger.json from k8s.io/kube-openapi's
// module directory (go list -m: the version go.mod pins).
func openAPIDocument(t *testing.T) map[string]any {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kube-openapi").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Skipf("go list -m k8s.io/kube-openapi: %v (run `go mod download`)", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "pkg/schemaconv/testdata/swagger.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("Kubernetes' OpenAPI document: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

// writeSchemas writes one standalone strict schema per kind into dir,
// named as kubeconform's {{.ResourceKind}}{{.KindSuffix}}.json template
// expects (daemonset-apps-v1.json, configmap-v1.json), and returns how
// many it wrote.
func writeSchemas(t *testing.T, doc map[string]any, dir string) int {
	t.Helper()
	defs, _ := doc["definitions"].(map[string]any)
	n := 0
	for name, d := range defs {
		def, _ := d.(map[string]any)
		gvks, _ := def["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk, _ := g.(map[string]any)
			group, _ := gvk["group"].(string)
			version, _ := gvk["version"].(string)
			kind, _ := gvk["kind"].(string)
			file := strings.ToLower(kind)
			if group != "" {
				file += "-" + strings.ToLower(strings.Split(group, ".")[0])
			}
			file += "-" + strings.ToLower(version) + ".json"
			schema := standalone(defs, name, map[string]bool{})
			data, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	return n
}

// standalone is definition name with every $ref inlined (a ref back into
// the path, as in the CRD schema types, becomes an open schema), objects
// closed (additionalProperties false unless the definition says
// otherwise or preserves unknown fields), int-or-string and Quantity
// accepting a number or a string, as openapi2jsonschema.py --strict does.
func standalone(defs map[string]any, name string, path map[string]bool) any {
	switch name {
	case "io.k8s.apimachinery.pkg.api.resource.Quantity":
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
	case "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
	}
	if path[name] {
		return map[string]any{}
	}
	path[name] = true
	defer delete(path, name)
	return inline(defs, defs[name], path)
}

func inline(defs map[string]any, v any, path map[string]bool) any {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			return standalone(defs, strings.TrimPrefix(ref, "#/definitions/"), path)
		}
		if x["format"] == "int-or-string" {
			return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
		}
		out := map[string]any{}
		for k, e := range x {
			if k == "properties" {
				props := map[string]any{}
				for p, s := range e.(map[string]any) {
					props[p] = inline(defs, s, path)
				}
				out[k] = props
				continue
			}
			out[k] = inline(defs, e, path)
		}
		if _, ok := x["properties"]; ok {
			if _, set := x["additionalProperties"]; !set && x["x-kubernetes-preserve-unknown-fields"] != true {
				out["additionalProperties"] = false
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = inline(defs, e, path)
		}
		return out
	}
	return v
}

// runKubeconform validates files against the schemas in dir.
func runKubeconform(t *testing.T, bin, dir string, files ...string) (string, error) {
	t.Helper()
	args := append([]string{"-strict", "-summary", "-output", "text",
		"-schema-location", filepath.Join(dir, "{{ .ResourceKind }}{{ .KindSuffix }}.json")}, files...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

// TestKubeconformAcceptsTheManifests validates every manifest here; it
// also feeds kubeconform a misspelt probe field, which must fail, so that
// a validator that checks nothing (a missing schema, a closed template
// that matches no file) cannot pass.
func TestKubeconformAcceptsTheManifests(t *testing.T) {
	bin := kubeconform(t)
	doc := openAPIDocument(t)
	dir := t.TempDir()
	if n := writeSchemas(t, doc, dir); n < 100 {
		t.Fatalf("only %d schemas from Kubernetes' OpenAPI document", n)
	}
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	out, err := runKubeconform(t, bin, dir, files...)
	if err != nil {
		t.Fatalf("kubeconform -strict %v: %v\n%s", files, err, out)
	}
	if !strings.Contains(out, fmt.Sprintf("Valid: %d", len(files))) {
		t.Errorf("kubeconform did not count every manifest valid (want Valid: %d):\n%s", len(files), out)
	}
	t.Logf("kubeconform: %s", strings.TrimSpace(out))

	data, err := os.ReadFile("daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), "timeoutSeconds:", "timeoutSecond:", 1)
	if bad == string(data) {
		t.Fatal("daemonset.yaml has no timeoutSeconds to misspell")
	}
	badFile := filepath.Join(t.TempDir(), "daemonset.yaml")
	if err := os.WriteFile(badFile, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runKubeconform(t, bin, dir, badFile); err == nil || !strings.Contains(out, "timeoutSecond") {
		t.Errorf("kubeconform accepted a probe with timeoutSecond: %v\n%s", err, out)
	}
}
