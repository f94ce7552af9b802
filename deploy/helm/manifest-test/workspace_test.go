package manifesttest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// workspaceValues is the chart's `workspace` block: the workspace source
// (Amp's workspace API) for a whole workspace from one pod.
type workspaceValues struct {
	Enabled      bool   `json:"enabled"`
	ClientID     string `json:"clientID"`
	ClientSecret struct {
		ExistingSecret string `json:"existingSecret"`
		Key            string `json:"key"`
		MountAs        string `json:"mountAs"`
	} `json:"clientSecret"`
	ClientAuth           string   `json:"clientAuth"`
	Resource             string   `json:"resource"`
	Scopes               []string `json:"scopes"`
	UserLabel            string   `json:"userLabel"`
	MaxRequestsPerMinute int      `json:"maxRequestsPerMinute"`
	SyncInterval         string   `json:"syncInterval"`
	HistoryDays          int      `json:"historyDays"`
}

// The keys of amp_workspace the chart writes from the workspace block; the
// others come from config.amp_workspace unchanged.
var workspaceManagedKeys = []string{
	"enabled", "client_id", "client_secret_file", "client_secret_env", "client_auth", "resource",
	"scopes", "user_label", "max_requests_per_minute", "sync_interval", "history_days",
}

// chartWorkspaceDefaults reads the workspace block of the chart's
// values.yaml, so the test holds the rendering to the documented defaults.
func chartWorkspaceDefaults(t *testing.T) workspaceValues {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatalf("chart values: %v", err)
	}
	var v struct {
		Workspace workspaceValues `json:"workspace"`
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("chart values.yaml: %v", err)
	}
	return v.Workspace
}

// checkWorkspace: with workspace.enabled the pod's configuration has an
// amp_workspace block with the values' settings, the client secret comes
// from the existing Secret as a read-only file (client_secret_file) or an
// environment variable filled from it (client_secret_env), never as a
// value, and the state is on a PersistentVolumeClaim. Without it the chart
// adds nothing.
func checkWorkspace(t *testing.T, m *manifests, v ciValues, c corev1.Container, cfgText string,
	mounts map[string]corev1.VolumeMount, volumes map[string]corev1.Volume, pvcState bool) {
	t.Helper()
	var cfg struct {
		AmpWorkspace map[string]any `json:"amp_workspace"`
	}
	if err := yaml.Unmarshal([]byte(cfgText), &cfg); err != nil {
		t.Fatalf("%s: %v", configKey, err)
	}
	given, _ := v.Config["amp_workspace"].(map[string]any)
	ws := v.Workspace
	if !ws.Enabled {
		if len(given) == 0 && cfg.AmpWorkspace != nil {
			t.Errorf("workspace off and no config.amp_workspace, yet the configuration has amp_workspace: %v", cfg.AmpWorkspace)
		}
		for _, vol := range volumes {
			if vol.Name == "workspace-secret" {
				t.Errorf("workspace off, yet the volume workspace-secret is rendered")
			}
		}
		return
	}
	got := cfg.AmpWorkspace
	if got == nil {
		t.Fatalf("workspace.enabled, but the configuration has no amp_workspace block:\n%s", cfgText)
	}

	// One pod for the whole workspace, its per-thread state kept.
	if !pvcState {
		t.Errorf("workspace.enabled without a PersistentVolumeClaim for the state")
	}

	want := map[string]any{
		"enabled":                 true,
		"client_id":               ws.ClientID,
		"client_auth":             ws.ClientAuth,
		"user_label":              ws.UserLabel,
		"max_requests_per_minute": ws.MaxRequestsPerMinute,
		"sync_interval":           ws.SyncInterval,
		"history_days":            ws.HistoryDays,
	}
	if ws.Resource != "" {
		want["resource"] = ws.Resource
	}
	if len(ws.Scopes) > 0 {
		want["scopes"] = ws.Scopes
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("amp_workspace.%s = %v, want %v", k, g, w)
		}
	}
	for _, k := range []string{"resource", "scopes"} {
		if _, set := want[k]; !set {
			if g, ok := got[k]; ok {
				t.Errorf("amp_workspace.%s = %v rendered though the values leave it unset (the exporter's default applies)", k, g)
			}
		}
	}
	// The keys the chart does not manage pass through from config.amp_workspace.
	for k, w := range given {
		if slices.Contains(workspaceManagedKeys, k) {
			continue
		}
		if g := got[k]; !reflect.DeepEqual(g, w) {
			t.Errorf("config.amp_workspace.%s = %v, rendered as %v", k, w, g)
		}
	}

	// The secret: never inline, exactly one of file and env.
	if _, ok := got["client_secret"]; ok {
		t.Errorf("amp_workspace has an inline client_secret")
	}
	file, hasFile := got["client_secret_file"].(string)
	env, hasEnv := got["client_secret_env"].(string)
	if hasFile == hasEnv {
		t.Fatalf("amp_workspace: want exactly one of client_secret_file and client_secret_env, got %v", got)
	}
	secret := ws.ClientSecret
	switch secret.MountAs {
	case "file":
		if !hasFile {
			t.Fatalf("clientSecret.mountAs file, but amp_workspace has client_secret_env %q", env)
		}
		vm, ok := mounts[filepath.Dir(file)]
		if !ok {
			t.Fatalf("client_secret_file %s is not in a mounted directory", file)
		}
		if !vm.ReadOnly {
			t.Errorf("the client secret's directory %s is mounted writable", vm.MountPath)
		}
		vol := volumes[vm.Name].Secret
		switch {
		case vol == nil:
			t.Errorf("client_secret_file %s: its volume %q is not a Secret", file, vm.Name)
		case vol.SecretName != secret.ExistingSecret:
			t.Errorf("client_secret_file %s: from Secret %q, want %q", file, vol.SecretName, secret.ExistingSecret)
		case len(vol.Items) != 1 || vol.Items[0].Key != secret.Key || vol.Items[0].Path != filepath.Base(file):
			t.Errorf("client_secret_file %s: want only the Secret's key %q as %s, got items %+v",
				file, secret.Key, filepath.Base(file), vol.Items)
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == secret.ExistingSecret {
				t.Errorf("clientSecret.mountAs file, yet env %s is filled from the Secret too", e.Name)
			}
		}
	case "env":
		if !hasEnv {
			t.Fatalf("clientSecret.mountAs env, but amp_workspace has client_secret_file %q", file)
		}
		var found []corev1.EnvVar
		for _, e := range c.Env {
			if e.Name == env {
				found = append(found, e)
			}
		}
		switch {
		case len(found) != 1:
			t.Errorf("client_secret_env %s: want one env var of that name, got %d", env, len(found))
		case found[0].Value != "":
			t.Errorf("env %s carries the secret as a value", env)
		case found[0].ValueFrom == nil || found[0].ValueFrom.SecretKeyRef == nil:
			t.Errorf("env %s is not filled from a Secret: %+v", env, found[0].ValueFrom)
		case found[0].ValueFrom.SecretKeyRef.Name != secret.ExistingSecret || found[0].ValueFrom.SecretKeyRef.Key != secret.Key:
			t.Errorf("env %s from Secret %s key %s, want %s key %s", env, found[0].ValueFrom.SecretKeyRef.Name,
				found[0].ValueFrom.SecretKeyRef.Key, secret.ExistingSecret, secret.Key)
		}
		for _, vol := range volumes {
			if vol.Secret != nil && vol.Secret.SecretName == secret.ExistingSecret {
				t.Errorf("clientSecret.mountAs env, yet the Secret is mounted as volume %q too", vol.Name)
			}
		}
	default:
		t.Errorf("clientSecret.mountAs %q: the test knows file and env", secret.MountAs)
	}
}

// inlineSecret matches a YAML key that holds a credential inline (not a
// _file or _env reference to one).
var inlineSecret = regexp.MustCompile(`(?m)^\s*(client_secret|api_key|password|token|bearer_token)\s*:\s*\S`)

// checkNoInlineSecret: in every rendering, no ConfigMap holds a credential
// inline and no environment variable that names a secret carries a value
// (it must come from a Secret).
func checkNoInlineSecret(t *testing.T, m *manifests, c corev1.Container) {
	t.Helper()
	for _, cm := range m.configMaps {
		for k, d := range cm.Data {
			if loc := inlineSecret.FindString(d); loc != "" {
				t.Errorf("ConfigMap %s, %s: a credential inline: %q", cm.Name, k, loc)
			}
		}
	}
	secretish := regexp.MustCompile(`(?i)secret|token|password|api_key`)
	for _, e := range c.Env {
		if secretish.MatchString(e.Name) && e.Value != "" {
			t.Errorf("env %s carries a value; a credential must come from a Secret (valueFrom)", e.Name)
		}
	}
}
