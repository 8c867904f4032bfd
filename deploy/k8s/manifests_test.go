// Package k8s_test checks the Kubernetes manifests in deploy/k8s: each
// decodes strictly into its k8s.io/api type (an unknown or misplaced field
// fails, as `kubectl apply --validate=strict` would), the ConfigMap's
// supervisor config passes the supervisor's own validation, and the
// DaemonSet agrees with that config (ports, probes, stop bound).
package k8s_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// manifests are the objects of every *.yaml here, decoded strictly.
type manifests struct {
	daemonSet *appsv1.DaemonSet
	configMap *corev1.ConfigMap
	service   *corev1.Service
	pdb       *policyv1.PodDisruptionBudget
}

// newObject returns the typed object for a manifest's apiVersion and kind.
func (m *manifests) newObject(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "apps/v1 DaemonSet":
		m.daemonSet = &appsv1.DaemonSet{}
		return m.daemonSet
	case "v1 ConfigMap":
		m.configMap = &corev1.ConfigMap{}
		return m.configMap
	case "v1 Service":
		m.service = &corev1.Service{}
		return m.service
	case "policy/v1 PodDisruptionBudget":
		m.pdb = &policyv1.PodDisruptionBudget{}
		return m.pdb
	}
	return nil
}

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/k8s: %v", err)
	}
	m := &manifests{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(data, []byte("\n---\n")) {
			m.decode(t, f, i, doc)
		}
	}
	if m.daemonSet == nil || m.configMap == nil || m.service == nil {
		t.Fatalf("want a DaemonSet, a ConfigMap and a Service, have %+v", m)
	}
	return m
}

// decode reads one document's type, then the whole of it strictly.
func (m *manifests) decode(t *testing.T, file string, i int, doc []byte) {
	t.Helper()
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		t.Fatalf("%s document %d: %v", file, i, err)
	}
	obj := m.newObject(meta.APIVersion, meta.Kind)
	if obj == nil {
		t.Fatalf("%s document %d: %s %q is not a kind this test knows; add it to newObject", file, i, meta.APIVersion, meta.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Errorf("%s document %d (%s): %v", file, i, meta.Kind, err)
	}
}

// TestStrictDecodingRejectsUnknownFields: the decoding above would catch a
// misspelt field.
func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	doc := []byte("apiVersion: v1\nkind: Service\nspec:\n  selectr: {app: x}\n")
	if err := yaml.UnmarshalStrict(doc, &corev1.Service{}); err == nil {
		t.Fatal("a Service with spec.selectr decoded without error")
	}
}

func TestManifestsDecodeStrictly(t *testing.T) { loadManifests(t) }

// supervisorConfig is the ConfigMap's config, validated by the
// supervisor's own loader (the model files are the node's, not checked).
func supervisorConfig(t *testing.T, m *manifests) *config.Config {
	t.Helper()
	data, ok := m.configMap.Data["supervisor.yaml"]
	if !ok {
		t.Fatal("the ConfigMap has no supervisor.yaml")
	}
	cfg, err := config.ParseConfig([]byte(data), "deploy/k8s/configmap.yaml supervisor.yaml")
	if err != nil {
		t.Fatalf("the ConfigMap's supervisor config is invalid:\n%v", err)
	}
	return cfg
}

// TestDaemonSetFitsTheConfig: the grace period exceeds the stop bound, the
// probes use the V2 health routes on the config's port, and the scrape
// annotation names the metrics port.
func TestDaemonSetFitsTheConfig(t *testing.T) {
	m := loadManifests(t)
	cfg := supervisorConfig(t, m)
	spec := m.daemonSet.Spec.Template.Spec
	if g := spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= cfg.StopBound() {
		t.Errorf("terminationGracePeriodSeconds %v does not exceed the stop bound %s (drain_grace + 2 × shutdown_timeout)", g, cfg.StopBound())
	}
	if cfg.DrainGrace.Duration <= 0 {
		t.Error("drain_grace is 0: a deleted pod would refuse connections before kube-proxy takes it out")
	}
	c := spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, listen := range map[string]string{"http": cfg.Listen, "grpc": cfg.GRPC.Listen, "metrics": cfg.Metrics.Listen} {
		if want := ":" + strconv.Itoa(int(ports[name])); !bytes.HasSuffix([]byte(listen), []byte(want)) {
			t.Errorf("container port %s is %d, the config listens on %q", name, ports[name], listen)
		}
	}
	for what, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		want := "/v2/health/ready"
		if what == "liveness" {
			want = "/v2/health/live"
		}
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe %+v, want GET %s on port http", what, probe, want)
		}
	}
	if _, ok := c.Resources.Limits["nvidia.com/gpu"]; !ok {
		t.Error("the container has no nvidia.com/gpu limit")
	}
	if p := m.daemonSet.Spec.Template.Annotations["prometheus.io/port"]; p != strconv.Itoa(int(ports["metrics"])) {
		t.Errorf("prometheus.io/port %q is not the metrics port %d", p, ports["metrics"])
	}
}

// TestDaemonSetDisruptionIsItsOwn: a PodDisruptionBudget over DaemonSet
// pods may only set an integer minAvailable (a DaemonSet has no scale
// subresource); with maxUnavailable or a percentage the disruption
// controller cannot count the pods and refuses every eviction, blocking
// node drains. The DaemonSet's own rolling update bounds its disruption.
func TestDaemonSetDisruptionIsItsOwn(t *testing.T) {
	m := loadManifests(t)
	ds := m.daemonSet
	if m.pdb != nil {
		sel := m.pdb.Spec.Selector
		selects := sel != nil && len(sel.MatchLabels) > 0
		for k, v := range sel.MatchLabels {
			selects = selects && ds.Spec.Template.Labels[k] == v
		}
		if selects && (m.pdb.Spec.MaxUnavailable != nil ||
			(m.pdb.Spec.MinAvailable != nil && m.pdb.Spec.MinAvailable.Type != intstr.Int)) {
			t.Errorf("PodDisruptionBudget %s sets maxUnavailable or a percentage minAvailable over the DaemonSet's pods: "+
				"Kubernetes refuses every eviction then; use the DaemonSet's updateStrategy", m.pdb.Name)
		}
	}
	u := ds.Spec.UpdateStrategy
	if u.Type != appsv1.RollingUpdateDaemonSetStrategyType || u.RollingUpdate == nil ||
		u.RollingUpdate.MaxUnavailable == nil || u.RollingUpdate.MaxUnavailable.String() != "1" {
		t.Errorf("updateStrategy %+v, want RollingUpdate with maxUnavailable 1 (one node at a time)", u)
	}
}

// TestProbesFitTheConfig: the startup probe outlasts boot_timeout with a
// margin (it allowed exactly boot_timeout: a boot that took all of it, plus
// the master's own start, was killed by liveness); readiness tolerates a
// slow answer (timeout of a few seconds, 2 failures or more) and still
// takes the pod out within drain_grace.
func TestProbesFitTheConfig(t *testing.T) {
	m := loadManifests(t)
	cfg := supervisorConfig(t, m)
	c := m.daemonSet.Spec.Template.Spec.Containers[0]
	sec := func(n int32) time.Duration { return time.Duration(n) * time.Second }
	const margin = time.Minute
	if s := c.StartupProbe; s == nil ||
		sec(s.InitialDelaySeconds)+sec(s.PeriodSeconds)*time.Duration(s.FailureThreshold) < cfg.BootTimeout.Duration+margin {
		t.Errorf("the startup probe allows %v, want at least boot_timeout %s + %s", allowed(s), cfg.BootTimeout.Duration, margin)
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.TimeoutSeconds < 3 {
			t.Errorf("%s probe: timeoutSeconds %v, want 3 or more (the default 1s fails a busy node)", name, p)
		}
	}
	r := c.ReadinessProbe
	if r.FailureThreshold < 2 {
		t.Errorf("readiness failureThreshold %d: one slow answer takes the pod out; want 2 or more", r.FailureThreshold)
	}
	if out := sec(r.PeriodSeconds) * time.Duration(r.FailureThreshold); cfg.DrainGrace.Duration <= out {
		t.Errorf("drain_grace %s does not outlast readiness's %d failures %ds apart (%s)", cfg.DrainGrace.Duration, r.FailureThreshold, r.PeriodSeconds, out)
	}
}

func allowed(p *corev1.Probe) any {
	if p == nil {
		return "nothing (no probe)"
	}
	return time.Duration(p.InitialDelaySeconds+p.PeriodSeconds*p.FailureThreshold) * time.Second
}
