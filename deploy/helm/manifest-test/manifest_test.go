package manifesttest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Paths inside the container: the chart's contract with the exporter and
// with users' configurations.
const (
	storagePath   = "/var/lib/amp-exporter"
	secretsDir    = "/etc/amp-exporter/secrets"
	configKey     = "amp-exporter.yml"
	defaultThread = "/data/amp/threads"
	defaultStream = "/data/amp/runs"
	listenArg     = "--web.listen-address=:9974"
	containerPort = 9974
	chartLabel    = "helm.sh/chart"
	versionLabel  = "app.kubernetes.io/version"
	dashboardKey  = "grafana_dashboard"
)

// The rendered files .ci/helm-check must always provide.
var requiredRenders = []string{"default-values.yaml", "all-enabled-values.yaml"}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Locations, relative to this module's directory (go test runs there).
var (
	chartDir      = envOr("CHART_DIR", filepath.Join("..", "amp-exporter"))
	rulesFile     = envOr("RULES_FILE", filepath.Join("..", "..", "rules", "amp-exporter.rules.yml"))
	dashboardsDir = envOr("DASHBOARDS_DIR", filepath.Join("..", "..", "..", "dashboards"))
)

// manifests is one rendering of the chart, every document decoded strictly
// into its API type.
type manifests struct {
	file            string
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	configMaps      []*corev1.ConfigMap
	serviceAccounts []*corev1.ServiceAccount
	pvcs            []*corev1.PersistentVolumeClaim
	serviceMonitors []*monitoringv1.ServiceMonitor
	prometheusRules []*monitoringv1.PrometheusRule
	// generic holds every document as plain JSON-shaped data, by kind/name.
	generic map[string]map[string]any
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// load splits a multi-document YAML file and decodes each document with
// yaml.UnmarshalStrict into the Go type of its apiVersion and kind: an
// unknown field, a wrong type, a duplicate key or an unknown kind fails.
func load(t *testing.T, path string) *manifests {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read rendered manifests: %v", err)
	}
	m := &manifests{file: filepath.Base(path), generic: map[string]map[string]any{}}
	for i, doc := range docSeparator.Split(string(data), -1) {
		var generic map[string]any
		if err := yaml.Unmarshal([]byte(doc), &generic); err != nil {
			t.Errorf("%s: document %d is not YAML: %v", m.file, i, err)
			continue
		}
		if generic == nil {
			continue // only comments (helm's "# Source:" header of an empty template)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Errorf("%s: document %d: %v", m.file, i, err)
			continue
		}
		var obj metav1.Object
		var keep func()
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 Deployment":
			o := &appsv1.Deployment{}
			obj, keep = o, func() { m.deployments = append(m.deployments, o) }
		case "v1 Service":
			o := &corev1.Service{}
			obj, keep = o, func() { m.services = append(m.services, o) }
		case "v1 ConfigMap":
			o := &corev1.ConfigMap{}
			obj, keep = o, func() { m.configMaps = append(m.configMaps, o) }
		case "v1 ServiceAccount":
			o := &corev1.ServiceAccount{}
			obj, keep = o, func() { m.serviceAccounts = append(m.serviceAccounts, o) }
		case "v1 PersistentVolumeClaim":
			o := &corev1.PersistentVolumeClaim{}
			obj, keep = o, func() { m.pvcs = append(m.pvcs, o) }
		case "monitoring.coreos.com/v1 ServiceMonitor":
			o := &monitoringv1.ServiceMonitor{}
			obj, keep = o, func() { m.serviceMonitors = append(m.serviceMonitors, o) }
		case "monitoring.coreos.com/v1 PrometheusRule":
			o := &monitoringv1.PrometheusRule{}
			obj, keep = o, func() { m.prometheusRules = append(m.prometheusRules, o) }
		default:
			t.Errorf("%s: document %d: unexpected kind %q (apiVersion %q): add it to the test if the chart should render it",
				m.file, i, tm.Kind, tm.APIVersion)
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Errorf("%s: %s document %d does not decode strictly: %v", m.file, tm.Kind, i, err)
			continue
		}
		keep()
		key := tm.Kind + "/" + obj.GetName()
		if _, dup := m.generic[key]; dup {
			t.Errorf("%s: two documents are %s", m.file, key)
		}
		m.generic[key] = generic
		checkMeta(t, m.file, tm.Kind, obj)
	}
	return m
}

// checkMeta validates names, labels and annotations the way the API server
// would.
func checkMeta(t *testing.T, file, kind string, meta metav1.Object) {
	t.Helper()
	where := fmt.Sprintf("%s: %s %q", file, kind, meta.GetName())
	nameErrs := validation.IsDNS1123Subdomain(meta.GetName())
	if kind == "Service" {
		nameErrs = validation.IsDNS1035Label(meta.GetName())
	}
	for _, e := range nameErrs {
		t.Errorf("%s: invalid name: %s", where, e)
	}
	if meta.GetNamespace() == "" {
		t.Errorf("%s: no namespace", where)
	}
	checkLabels(t, where, meta.GetLabels())
	for k := range meta.GetAnnotations() {
		for _, e := range validation.IsQualifiedName(k) {
			t.Errorf("%s: annotation key %q: %s", where, k, e)
		}
	}
}

func checkLabels(t *testing.T, where string, labels map[string]string) {
	t.Helper()
	for k, v := range labels {
		for _, e := range validation.IsQualifiedName(k) {
			t.Errorf("%s: label key %q: %s", where, k, e)
		}
		for _, e := range validation.IsValidLabelValue(v) {
			t.Errorf("%s: label %s=%q: %s", where, k, v, e)
		}
	}
}

// ciValues is the part of a ci/*-values.yaml file that decides what the
// rendering must contain (everything else is the chart's defaults).
type ciValues struct {
	Threads          source `json:"threads"`
	Streams          source `json:"streams"`
	FullnameOverride string `json:"fullnameOverride"`
	Amy              struct {
		ExistingSecret string `json:"existingSecret"`
		Proxy          struct {
			Port            int32  `json:"port"`
			WebConfigSecret string `json:"webConfigSecret"`
		} `json:"proxy"`
	} `json:"amy"`
	Web struct {
		Config struct {
			ExistingSecret string `json:"existingSecret"`
			Key            string `json:"key"`
		} `json:"config"`
		TLS           bool     `json:"tls"`
		ExternalNames []string `json:"externalNames"`
		ClusterDomain string   `json:"clusterDomain"`
	} `json:"web"`
	Workspace   workspaceValues `json:"workspace"`
	Config      map[string]any  `json:"config"`
	Persistence struct {
		Enabled       bool   `json:"enabled"`
		ExistingClaim string `json:"existingClaim"`
	} `json:"persistence"`
	ServiceMonitor struct {
		Enabled bool              `json:"enabled"`
		Labels  map[string]string `json:"labels"`
	} `json:"serviceMonitor"`
	PrometheusRule struct {
		Enabled bool              `json:"enabled"`
		Labels  map[string]string `json:"labels"`
	} `json:"prometheusRule"`
	Dashboards struct {
		Enabled     bool              `json:"enabled"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"dashboards"`
}

type source struct {
	HostPath      string `json:"hostPath"`
	ExistingClaim string `json:"existingClaim"`
	MountPath     string `json:"mountPath"`
}

func (s source) mounted() bool { return s.HostPath != "" || s.ExistingClaim != "" }

func readValues(t *testing.T, name string) ciValues {
	t.Helper()
	var v ciValues
	// The workspace block is checked against what the chart's own
	// values.yaml gives, with the values file on top.
	v.Workspace = chartWorkspaceDefaults(t)
	data, err := os.ReadFile(filepath.Join(chartDir, "ci", name))
	if err != nil {
		t.Logf("no values file ci/%s (%v): checking against the chart's defaults", name, err)
	} else if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("ci/%s: %v", name, err)
	}
	if v.Threads.MountPath == "" {
		v.Threads.MountPath = defaultThread
	}
	if v.Streams.MountPath == "" {
		v.Streams.MountPath = defaultStream
	}
	if v.Web.Config.Key == "" {
		v.Web.Config.Key = "web-config.yml"
	}
	return v
}

func renderedDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RENDERED_DIR")
	if dir == "" {
		t.Skip("RENDERED_DIR is not set: run .ci/helm-check, which renders the chart and runs this test")
	}
	return dir
}

func renderedFiles(t *testing.T) []string {
	t.Helper()
	dir := renderedDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range requiredRenders {
		if !slices.Contains(files, filepath.Join(dir, want)) {
			t.Errorf("RENDERED_DIR %s has no %s", dir, want)
		}
	}
	return files
}

func TestRenderedManifests(t *testing.T) {
	for _, path := range renderedFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			m := load(t, path)
			v := readValues(t, filepath.Base(path))
			checkRendering(t, m, v)
		})
	}
}

func one[T any](t *testing.T, what string, items []*T) *T {
	t.Helper()
	if len(items) != 1 {
		t.Fatalf("want exactly one %s, got %d", what, len(items))
	}
	return items[0]
}

func checkRendering(t *testing.T, m *manifests, v ciValues) {
	dep := one(t, "Deployment", m.deployments)
	svc := one(t, "Service", m.services)
	sa := one(t, "ServiceAccount", m.serviceAccounts)
	if v.FullnameOverride != "" && dep.Name != v.FullnameOverride {
		t.Errorf("Deployment is %q, want fullnameOverride %q", dep.Name, v.FullnameOverride)
	}

	// Selector labels: stable across upgrades, so no chart or app version.
	sel := dep.Spec.Selector.MatchLabels
	if len(sel) == 0 || len(dep.Spec.Selector.MatchExpressions) != 0 {
		t.Errorf("Deployment selector: want matchLabels only, got %+v", dep.Spec.Selector)
	}
	checkSelector(t, "Deployment selector", sel)
	checkSelector(t, "Service selector", svc.Spec.Selector)
	if !reflect.DeepEqual(sel, svc.Spec.Selector) {
		t.Errorf("Service selector %v differs from the Deployment's %v", svc.Spec.Selector, sel)
	}
	for k, want := range sel {
		if got := dep.Spec.Template.Labels[k]; got != want {
			t.Errorf("pod label %s=%q, selector wants %q", k, got, want)
		}
	}
	checkLabels(t, "pod template", dep.Spec.Template.Labels)

	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 {
		t.Errorf("replicas: want 1 (the exporter keeps counting state)")
	}
	pvcState := v.Persistence.Enabled || v.Persistence.ExistingClaim != ""
	if pvcState && dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %q with a PVC for the state, want Recreate", dep.Spec.Strategy.Type)
	}

	// Service: port named http, to the container's http port, and the Amy
	// proxy's when it is exposed.
	wantPorts := 1
	if v.Amy.Proxy.Port > 0 {
		wantPorts = 2
		if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[1].Name != "amy-proxy" || svc.Spec.Ports[1].Port != v.Amy.Proxy.Port || svc.Spec.Ports[1].TargetPort.String() != "amy-proxy" {
			t.Errorf("Service ports: want amy-proxy %d second, got %+v", v.Amy.Proxy.Port, svc.Spec.Ports)
		}
	}
	if len(svc.Spec.Ports) != wantPorts || svc.Spec.Ports[0].Name != "http" || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports: want %d, the first named http targeting http, got %+v", wantPorts, svc.Spec.Ports)
	}

	pod := dep.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("pod automountServiceAccountToken: want false")
	}
	if pod.ServiceAccountName != sa.Name {
		t.Errorf("pod serviceAccountName %q, want the chart's ServiceAccount %q", pod.ServiceAccountName, sa.Name)
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("ServiceAccount automountServiceAccountToken: want false")
	}

	// Security: non-root everywhere.
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65534 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext: want runAsNonRoot, runAsUser 65534, seccomp RuntimeDefault; got %+v", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatalf("container has no securityContext")
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Errorf("container securityContext: want runAsNonRoot true")
	case sc.RunAsUser == nil || *sc.RunAsUser != 65534:
		t.Errorf("container securityContext: want runAsUser 65534")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("container securityContext: want readOnlyRootFilesystem true")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("container securityContext: want allowPrivilegeEscalation false")
	case sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0:
		t.Errorf("container securityContext: want capabilities drop [ALL], add none; got %+v", sc.Capabilities)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("container securityContext: want seccompProfile RuntimeDefault")
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("container securityContext: privileged")
	}

	// Resources: the exporter peaks at ~40 MiB.
	if got := c.Resources.Limits.Memory(); got.Cmp(resource.MustParse("128Mi")) != 0 {
		t.Errorf("memory limit %s, want 128Mi", got)
	}
	if req := c.Resources.Requests.Memory(); req.IsZero() || req.Cmp(*c.Resources.Limits.Memory()) > 0 {
		t.Errorf("memory request %s: want set and at most the limit", req)
	}
	if c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("no cpu request")
	}

	// Port and probes.
	if len(c.Ports) != wantPorts || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != containerPort {
		t.Errorf("container ports: want http %d, got %+v", containerPort, c.Ports)
	}
	if v.Amy.Proxy.Port > 0 {
		if c.Ports[len(c.Ports)-1].Name != "amy-proxy" || c.Ports[len(c.Ports)-1].ContainerPort != v.Amy.Proxy.Port {
			t.Errorf("container ports: want amy-proxy %d, got %+v", v.Amy.Proxy.Port, c.Ports)
		}
		// The proxy is exposed only with TLS: its web config is mounted.
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || (m.Name == "amy-proxy-web-config" && m.MountPath == "/etc/amp-exporter/amy-proxy-web" && m.ReadOnly)
		}
		if !mounted {
			t.Errorf("amy.proxy.port set: the proxy's web config is not mounted read-only: %+v", c.VolumeMounts)
		}
	}
	// The exporter answers the Service's names and the configured ones
	// (it refuses other names: DNS rebinding).
	domain := v.Web.ClusterDomain
	if domain == "" {
		domain = "cluster.local"
	}
	svcName := one(t, "Service", m.services)
	names := []string{svcName.Name, svcName.Name + "." + svcName.Namespace, svcName.Name + "." + svcName.Namespace + ".svc",
		svcName.Name + "." + svcName.Namespace + ".svc." + domain}
	for _, n := range append(names, v.Web.ExternalNames...) {
		if !slices.Contains(c.Args, "--web.external-name="+n) {
			t.Errorf("args %q lack --web.external-name=%s", c.Args, n)
		}
	}
	// Scrape and connection limits are passed on.
	for _, f := range []string{"--web.max-requests", "--web.max-connections"} {
		flagValue(t, c.Args, f)
	}
	scheme := corev1.URISchemeHTTP
	if v.Web.TLS {
		scheme = corev1.URISchemeHTTPS
	}
	checkProbe(t, "livenessProbe", c.LivenessProbe, "/-/healthy", scheme)
	checkProbe(t, "readinessProbe", c.ReadinessProbe, "/-/ready", scheme)
	checkProbe(t, "startupProbe", c.StartupProbe, "/-/healthy", scheme)
	if p := c.StartupProbe; p != nil {
		if budget := time.Duration(p.FailureThreshold*p.PeriodSeconds) * time.Second; budget < 2*time.Minute {
			t.Errorf("startupProbe allows %s, want a generous budget (≥ 2m)", budget)
		}
	}

	// Arguments.
	args := c.Args
	for _, want := range []string{listenArg, "--storage.path=" + storagePath} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	configFile := flagValue(t, args, "--config.file")

	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		if _, dup := mounts[vm.MountPath]; dup {
			t.Errorf("two volumes mounted at %s", vm.MountPath)
		}
		mounts[vm.MountPath] = vm
	}
	volumes := map[string]corev1.Volume{}
	for _, vol := range pod.Volumes {
		volumes[vol.Name] = vol
	}
	for _, vm := range c.VolumeMounts {
		if _, ok := volumes[vm.Name]; !ok {
			t.Errorf("volumeMount %s: no volume %q", vm.MountPath, vm.Name)
		}
	}

	// Configuration: a ConfigMap, mounted, with the config checksum on the pod.
	cfgMount, ok := mounts[filepath.Dir(configFile)]
	if !ok || filepath.Base(configFile) != configKey {
		t.Fatalf("--config.file=%s: want %s in a mounted directory", configFile, configKey)
	}
	cfgVol := volumes[cfgMount.Name]
	if cfgVol.ConfigMap == nil {
		t.Fatalf("--config.file's volume %q is not a ConfigMap", cfgMount.Name)
	}
	cm := findConfigMap(t, m, cfgVol.ConfigMap.Name)
	cfgText, ok := cm.Data[configKey]
	if !ok {
		t.Fatalf("ConfigMap %s has no %s", cm.Name, configKey)
	}
	sum := sha256.Sum256([]byte(strings.TrimSuffix(cfgText, "\n")))
	if got, want := dep.Spec.Template.Annotations["checksum/config"], hex.EncodeToString(sum[:]); got != want {
		t.Errorf("pod annotation checksum/config=%q, want the sha256 of the rendered configuration %q", got, want)
	}
	var cfg struct {
		Threads struct {
			Dirs []string `json:"dirs"`
		} `json:"threads"`
		Streams struct {
			Dirs []string `json:"dirs"`
		} `json:"streams"`
	}
	if err := yaml.Unmarshal([]byte(cfgText), &cfg); err != nil {
		t.Fatalf("%s: %v", configKey, err)
	}
	// threads.dirs defaults to the thread mount; an explicit list wins.
	if want := configuredDirs(v.Config, "threads", v.Threads.MountPath); !slices.Equal(cfg.Threads.Dirs, want) {
		t.Errorf("config threads.dirs %q, want %q", cfg.Threads.Dirs, want)
	}
	if v.Streams.mounted() {
		if want := configuredDirs(v.Config, "streams", v.Streams.MountPath); !slices.Equal(cfg.Streams.Dirs, want) {
			t.Errorf("config streams.dirs %q, want %q", cfg.Streams.Dirs, want)
		}
	}

	// State: writable, PVC or emptyDir.
	state, ok := mounts[storagePath]
	if !ok {
		t.Fatalf("nothing mounted at --storage.path %s", storagePath)
	}
	if state.ReadOnly {
		t.Errorf("%s is mounted read-only", storagePath)
	}
	stateVol := volumes[state.Name]
	switch {
	case pvcState:
		if stateVol.PersistentVolumeClaim == nil {
			t.Fatalf("persistence on but %s is not a PVC: %+v", storagePath, stateVol.VolumeSource)
		}
		claim := stateVol.PersistentVolumeClaim.ClaimName
		if v.Persistence.ExistingClaim != "" {
			if claim != v.Persistence.ExistingClaim {
				t.Errorf("state claim %q, want existingClaim %q", claim, v.Persistence.ExistingClaim)
			}
			if len(m.pvcs) != 0 {
				t.Errorf("existingClaim set, yet the chart creates %d PVCs", len(m.pvcs))
			}
		} else {
			pvc := one(t, "PersistentVolumeClaim", m.pvcs)
			if pvc.Name != claim {
				t.Errorf("state claim %q, but the chart creates %q", claim, pvc.Name)
			}
			if pvc.Spec.Resources.Requests.Storage().IsZero() {
				t.Errorf("PVC %s requests no storage", pvc.Name)
			}
		}
	default:
		if stateVol.EmptyDir == nil {
			t.Errorf("persistence off but %s is not an emptyDir: %+v", storagePath, stateVol.VolumeSource)
		}
		if len(m.pvcs) != 0 {
			t.Errorf("persistence off, yet the chart creates %d PVCs", len(m.pvcs))
		}
	}

	// Sources: read-only.
	checkSource(t, "threads", v.Threads, mounts, volumes)
	checkSource(t, "streams", v.Streams, mounts, volumes)

	// Every mount except the state is read-only.
	for _, vm := range c.VolumeMounts {
		if vm.MountPath != storagePath && !vm.ReadOnly {
			t.Errorf("volume %q at %s is not mounted read-only", vm.Name, vm.MountPath)
		}
	}

	// Amy API keys as files from an existing Secret.
	if sm, ok := mounts[secretsDir]; v.Amy.ExistingSecret != "" {
		if !ok {
			t.Errorf("amy.existingSecret set, nothing mounted at %s", secretsDir)
		} else if sv := volumes[sm.Name]; sv.Secret == nil || sv.Secret.SecretName != v.Amy.ExistingSecret || !sm.ReadOnly {
			t.Errorf("%s: want Secret %q read-only, got %+v", secretsDir, v.Amy.ExistingSecret, sv.VolumeSource)
		}
	} else if ok {
		t.Errorf("amy.existingSecret unset, yet %s is mounted", secretsDir)
	}

	// Web configuration from an existing Secret.
	if v.Web.Config.ExistingSecret != "" {
		wf := flagValue(t, args, "--web.config.file")
		wm, ok := mounts[filepath.Dir(wf)]
		switch {
		case !ok:
			t.Errorf("--web.config.file=%s is not in a mounted directory", wf)
		case volumes[wm.Name].Secret == nil || volumes[wm.Name].Secret.SecretName != v.Web.Config.ExistingSecret:
			t.Errorf("--web.config.file=%s: want it from Secret %q", wf, v.Web.Config.ExistingSecret)
		case filepath.Base(wf) != v.Web.Config.Key:
			t.Errorf("--web.config.file=%s: want the Secret's key %s", wf, v.Web.Config.Key)
		}
	} else if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--web.config.file") }) {
		t.Errorf("web.config unset, yet args %q pass --web.config.file", args)
	}

	checkWorkspace(t, m, v, c, cfgText, mounts, volumes, pvcState)
	checkNoInlineSecret(t, m, c)

	checkServiceMonitor(t, m, v, svc)
	checkPrometheusRule(t, m, v)
	checkDashboards(t, m, v)
}

// configuredDirs is what <section>.dirs must be in the rendered
// configuration: the values' own list, else the mount path.
func configuredDirs(config map[string]any, section, mountPath string) []string {
	sec, _ := config[section].(map[string]any)
	list, _ := sec["dirs"].([]any)
	if len(list) == 0 {
		return []string{mountPath}
	}
	dirs := make([]string, len(list))
	for i, d := range list {
		dirs[i] = fmt.Sprint(d)
	}
	return dirs
}

func checkSelector(t *testing.T, what string, sel map[string]string) {
	t.Helper()
	if len(sel) == 0 {
		t.Errorf("%s is empty", what)
	}
	for _, bad := range []string{chartLabel, versionLabel} {
		if _, ok := sel[bad]; ok {
			t.Errorf("%s includes %s (it changes with every chart or app version)", what, bad)
		}
	}
	checkLabels(t, what, sel)
}

func checkProbe(t *testing.T, name string, p *corev1.Probe, path string, scheme corev1.URIScheme) {
	t.Helper()
	switch {
	case p == nil:
		t.Errorf("no %s", name)
	case p.HTTPGet == nil:
		t.Errorf("%s: want an httpGet probe", name)
	case p.HTTPGet.Path != path:
		t.Errorf("%s: path %q, want %q", name, p.HTTPGet.Path, path)
	case p.HTTPGet.Port.String() != "http":
		t.Errorf("%s: port %q, want http", name, p.HTTPGet.Port.String())
	case p.HTTPGet.Scheme != scheme:
		t.Errorf("%s: scheme %q, want %q", name, p.HTTPGet.Scheme, scheme)
	}
}

func flagValue(t *testing.T, args []string, flag string) string {
	t.Helper()
	var found []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		t.Fatalf("args %q: want %s=… exactly once", args, flag)
	}
	return found[0]
}

func findConfigMap(t *testing.T, m *manifests, name string) *corev1.ConfigMap {
	t.Helper()
	for _, cm := range m.configMaps {
		if cm.Name == name {
			return cm
		}
	}
	t.Fatalf("no ConfigMap %q", name)
	return nil
}

func checkSource(t *testing.T, what string, s source, mounts map[string]corev1.VolumeMount, volumes map[string]corev1.Volume) {
	t.Helper()
	vm, ok := mounts[s.MountPath]
	if !s.mounted() {
		if ok {
			t.Errorf("%s: no source configured, yet %s is mounted", what, s.MountPath)
		}
		return
	}
	if !ok {
		t.Fatalf("%s: source configured, nothing mounted at %s", what, s.MountPath)
	}
	if !vm.ReadOnly {
		t.Errorf("%s: %s is not mounted read-only", what, s.MountPath)
	}
	vol := volumes[vm.Name]
	switch {
	case s.ExistingClaim != "":
		if vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != s.ExistingClaim || !vol.PersistentVolumeClaim.ReadOnly {
			t.Errorf("%s: want claim %q read-only, got %+v", what, s.ExistingClaim, vol.VolumeSource)
		}
	default:
		if vol.HostPath == nil || vol.HostPath.Path != s.HostPath {
			t.Errorf("%s: want hostPath %q, got %+v", what, s.HostPath, vol.VolumeSource)
		}
	}
}

func checkServiceMonitor(t *testing.T, m *manifests, v ciValues, svc *corev1.Service) {
	t.Helper()
	if !v.ServiceMonitor.Enabled {
		if len(m.serviceMonitors) != 0 {
			t.Errorf("serviceMonitor off, yet %d rendered", len(m.serviceMonitors))
		}
		return
	}
	sm := one(t, "ServiceMonitor", m.serviceMonitors)
	checkSelector(t, "ServiceMonitor selector", sm.Spec.Selector.MatchLabels)
	for k, want := range sm.Spec.Selector.MatchLabels {
		if svc.Labels[k] != want {
			t.Errorf("ServiceMonitor selects %s=%q, the Service has %q", k, want, svc.Labels[k])
		}
	}
	if len(sm.Spec.NamespaceSelector.MatchNames) != 1 || sm.Spec.NamespaceSelector.MatchNames[0] != svc.Namespace {
		t.Errorf("ServiceMonitor namespaceSelector %+v, want the Service's namespace %s", sm.Spec.NamespaceSelector, svc.Namespace)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitor: want one endpoint, got %d", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Port != "http" || ep.Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoint port %q path %q, want http /metrics", ep.Port, ep.Path)
	}
	if sm.Spec.JobLabel != "" && svc.Labels[sm.Spec.JobLabel] != "amp-exporter" {
		t.Errorf("ServiceMonitor jobLabel %s gives job=%q, the alert rules expect amp-exporter", sm.Spec.JobLabel, svc.Labels[sm.Spec.JobLabel])
	}
	for k, want := range v.ServiceMonitor.Labels {
		if sm.Labels[k] != want {
			t.Errorf("ServiceMonitor label %s=%q, want %q", k, sm.Labels[k], want)
		}
	}
}

func checkPrometheusRule(t *testing.T, m *manifests, v ciValues) {
	t.Helper()
	if !v.PrometheusRule.Enabled {
		if len(m.prometheusRules) != 0 {
			t.Errorf("prometheusRule off, yet %d rendered", len(m.prometheusRules))
		}
		return
	}
	pr := one(t, "PrometheusRule", m.prometheusRules)
	for k, want := range v.PrometheusRule.Labels {
		if pr.Labels[k] != want {
			t.Errorf("PrometheusRule label %s=%q, want %q (ruleSelector)", k, pr.Labels[k], want)
		}
	}
	if len(pr.Spec.Groups) == 0 {
		t.Errorf("PrometheusRule has no groups")
	}
	// The groups, verbatim: compared as data with the source rules file.
	src, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatalf("rules source: %v", err)
	}
	var want struct {
		Groups any `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(src, &want); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	spec, _ := m.generic["PrometheusRule/"+pr.Name]["spec"].(map[string]any)
	if got := spec["groups"]; !reflect.DeepEqual(got, want.Groups) {
		t.Errorf("PrometheusRule groups differ from %s (is the chart's copy stale? run make chart-sync): %s",
			rulesFile, firstDifference(got, want.Groups))
	}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && r.Labels["severity"] == "" {
				t.Errorf("alert %s has no severity label", r.Alert)
			}
		}
	}
}

// firstDifference names the first rule group (and rule) where two lists of
// groups differ, to keep the failure short.
func firstDifference(got, want any) string {
	g, _ := got.([]any)
	w, _ := want.([]any)
	for i := 0; i < max(len(g), len(w)); i++ {
		if i >= len(g) || i >= len(w) {
			return fmt.Sprintf("%d groups rendered, %d in the source", len(g), len(w))
		}
		if reflect.DeepEqual(g[i], w[i]) {
			continue
		}
		gg, _ := g[i].(map[string]any)
		wg, _ := w[i].(map[string]any)
		gr, _ := gg["rules"].([]any)
		wr, _ := wg["rules"].([]any)
		for j := 0; j < min(len(gr), len(wr)); j++ {
			if !reflect.DeepEqual(gr[j], wr[j]) {
				a, _ := json.Marshal(gr[j])
				b, _ := json.Marshal(wr[j])
				return fmt.Sprintf("group %d (%v), rule %d:\nrendered: %s\nsource:   %s", i, wg["name"], j, a, b)
			}
		}
		a, _ := json.Marshal(gg)
		b, _ := json.Marshal(wg)
		const limit = 400
		return fmt.Sprintf("group %d (%v):\nrendered: %.*s\nsource:   %.*s", i, wg["name"], limit, a, limit, b)
	}
	return "(no difference found)"
}

func checkDashboards(t *testing.T, m *manifests, v ciValues) {
	t.Helper()
	var dashboards []*corev1.ConfigMap
	for _, cm := range m.configMaps {
		if _, ok := cm.Labels[dashboardKey]; ok {
			dashboards = append(dashboards, cm)
		}
	}
	if !v.Dashboards.Enabled {
		if len(dashboards) != 0 {
			t.Errorf("dashboards off, yet %d dashboard ConfigMaps rendered", len(dashboards))
		}
		return
	}
	sources, err := filepath.Glob(filepath.Join(dashboardsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(sources)
	if len(dashboards) != len(sources) {
		t.Errorf("%d dashboard ConfigMaps rendered, %d dashboards in %s", len(dashboards), len(sources), dashboardsDir)
	}
	byKey := map[string]*corev1.ConfigMap{}
	for _, cm := range dashboards {
		if got := cm.Labels[dashboardKey]; got != "1" && v.Dashboards.Labels[dashboardKey] == "" {
			t.Errorf("ConfigMap %s: label %s=%q, want \"1\"", cm.Name, dashboardKey, got)
		}
		for k, want := range v.Dashboards.Labels {
			if cm.Labels[k] != want {
				t.Errorf("ConfigMap %s: label %s=%q, want %q", cm.Name, k, cm.Labels[k], want)
			}
		}
		for k, want := range v.Dashboards.Annotations {
			if cm.Annotations[k] != want {
				t.Errorf("ConfigMap %s: annotation %s=%q, want %q", cm.Name, k, cm.Annotations[k], want)
			}
		}
		if len(cm.Data) != 1 {
			t.Errorf("ConfigMap %s: want one dashboard, got %d keys", cm.Name, len(cm.Data))
		}
		for k := range cm.Data {
			byKey[k] = cm
		}
	}
	for _, src := range sources {
		key := filepath.Base(src)
		cm, ok := byKey[key]
		if !ok {
			t.Errorf("no dashboard ConfigMap holds %s", key)
			continue
		}
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		var got, wantJSON any
		if err := json.Unmarshal([]byte(cm.Data[key]), &got); err != nil {
			t.Errorf("ConfigMap %s: %s is not JSON: %v", cm.Name, key, err)
			continue
		}
		if err := json.Unmarshal(want, &wantJSON); err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if !reflect.DeepEqual(got, wantJSON) {
			t.Errorf("ConfigMap %s: %s differs from %s", cm.Name, key, src)
		}
	}
}

// TestConfigChangeRollsThePod: the two renderings configure the exporter
// differently, so their checksums must differ.
func TestConfigChangeRollsThePod(t *testing.T) {
	dir := renderedDir(t)
	sums := map[string]string{}
	for _, name := range requiredRenders {
		m := load(t, filepath.Join(dir, name))
		if len(m.deployments) != 1 {
			t.Fatalf("%s: want one Deployment", name)
		}
		sums[name] = m.deployments[0].Spec.Template.Annotations["checksum/config"]
	}
	if sums[requiredRenders[0]] == sums[requiredRenders[1]] {
		t.Errorf("different configurations, same checksum/config %q", sums[requiredRenders[0]])
	}
}
