package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestWorkspaceDefaults(t *testing.T) {
	cfg, err := Load("", testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Workspace
	if w.Enabled || w.APIURL != "https://ampcode.com" || w.TokenURL != "https://auth.ampcode.com/oauth2/token" ||
		w.ClientAuth != WorkspaceAuthBasic || w.UserLabel != WorkspaceUserID || time.Duration(w.SyncInterval) != 5*time.Minute ||
		w.HistoryDays != 365 || w.MaxRequestsPerMinute != 120 || w.PageSize != 100 || w.Resource != "" {
		t.Fatalf("defaults %+v", w)
	}
	want := []string{"amp.api:workspace.threads.meta:view", "amp.api:workspace.threads.contents:view", "amp.api:workspace.analytics:view"}
	if !reflect.DeepEqual(w.Scopes, want) {
		t.Fatalf("scopes %q", w.Scopes)
	}
	if p := w.ListingParams; p != (WorkspaceListingParams{Cursor: "cursor", After: "after", Before: "before", Sort: "sort"}) {
		t.Fatalf("listing params %+v", p)
	}
}

func TestWorkspaceConfig(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("s3cr3t-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	on := "amp_workspace:\n  enabled: true\n  client_id: app_1\n"
	for _, tc := range []struct {
		name, yaml string
		vars       map[string]string
		wantErr    string
		check      func(t *testing.T, w WorkspaceConfig)
	}{
		{name: "off needs nothing", yaml: "amp_workspace: {enabled: false}", check: func(t *testing.T, w WorkspaceConfig) {
			if w.Enabled || w.ClientSecret != "" {
				t.Errorf("%+v", w)
			}
		}},
		{name: "secret from a file", yaml: on + "  client_secret_file: " + secretFile + "\n", check: func(t *testing.T, w WorkspaceConfig) {
			if string(w.ClientSecret) != "s3cr3t-from-file" || w.ClientID != "app_1" {
				t.Errorf("secret %q id %q", string(w.ClientSecret), w.ClientID)
			}
		}},
		{name: "secret from the environment", yaml: on + "  client_secret_env: WS_SECRET\n", vars: map[string]string{"WS_SECRET": "s3cr3t-from-env"},
			check: func(t *testing.T, w WorkspaceConfig) {
				if string(w.ClientSecret) != "s3cr3t-from-env" {
					t.Errorf("secret %q", string(w.ClientSecret))
				}
			}},
		{name: "post, resource, email, short scopes", vars: map[string]string{"S": "x"},
			yaml: on + "  client_secret_env: S\n  client_auth: post\n  resource: https://ampcode.com/api/v2\n  user_label: email\n  scopes: [threads.meta:view, amp.api:workspace.analytics:view, members:view]\n",
			check: func(t *testing.T, w WorkspaceConfig) {
				want := []string{"amp.api:workspace.threads.meta:view", "amp.api:workspace.analytics:view", "amp.api:workspace.members:view"}
				if w.ClientAuth != WorkspaceAuthPost || w.Resource != "https://ampcode.com/api/v2" || w.UserLabel != WorkspaceUserEmail || !reflect.DeepEqual(w.Scopes, want) {
					t.Errorf("%+v", w)
				}
			}},
		{name: "email adds members:view to the default scopes", vars: map[string]string{"S": "x"},
			yaml: on + "  client_secret_env: S\n  user_label: email\n", check: func(t *testing.T, w WorkspaceConfig) {
				if len(w.Scopes) != 4 || w.Scopes[3] != "amp.api:workspace.members:view" {
					t.Errorf("scopes %q", w.Scopes)
				}
			}},
		{name: "renamed listing parameters", vars: map[string]string{"S": "x"},
			yaml: on + "  client_secret_env: S\n  listing_params: {cursor: pageToken, sort: ''}\n", check: func(t *testing.T, w WorkspaceConfig) {
				if p := w.ListingParams; p.Cursor != "pageToken" || p.After != "after" || p.Sort != "" {
					t.Errorf("%+v", p)
				}
			}},
		{name: "no secret", yaml: on, wantErr: "amp_workspace: set client_secret_file or client_secret_env"},
		{name: "both secrets", yaml: on + "  client_secret_file: " + secretFile + "\n  client_secret_env: S\n", vars: map[string]string{"S": "x"},
			wantErr: "amp_workspace: set client_secret_file or client_secret_env, not both"},
		{name: "missing file", yaml: on + "  client_secret_file: " + filepath.Join(dir, "nope") + "\n", wantErr: "amp_workspace.client_secret_file: cannot read"},
		{name: "empty file", yaml: on + "  client_secret_file: " + empty + "\n", wantErr: "amp_workspace.client_secret_file: " + `"` + empty + `" is empty`},
		{name: "unset variable", yaml: on + "  client_secret_env: NOT_SET\n", wantErr: `amp_workspace.client_secret_env: the environment variable "NOT_SET" is empty or not set`},
		{name: "inline secret refused", yaml: on + "  client_secret: x\n", wantErr: `unknown key "client_secret" in amp_workspace`},
		{name: "no client id", yaml: "amp_workspace: {enabled: true, client_secret_env: S}", vars: map[string]string{"S": "x"}, wantErr: "amp_workspace.client_id: required"},
		{name: "client auth", yaml: on + "  client_secret_env: S\n  client_auth: both\n", vars: map[string]string{"S": "x"}, wantErr: `amp_workspace.client_auth: "both", want basic or post`},
		{name: "manage scope", yaml: on + "  client_secret_env: S\n  scopes: [threads:manage]\n", vars: map[string]string{"S": "x"},
			wantErr: `amp_workspace.scopes: "amp.api:workspace.threads:manage" is a manage scope; the exporter only reads (:view scopes)`},
		{name: "not a view scope", yaml: on + "  client_secret_env: S\n  scopes: [openid]\n", vars: map[string]string{"S": "x"},
			wantErr: `amp_workspace.scopes: "amp.api:workspace.openid" is not a :view scope`},
		{name: "email without members:view", yaml: on + "  client_secret_env: S\n  user_label: email\n  scopes: [threads.meta:view]\n", vars: map[string]string{"S": "x"},
			wantErr: "amp_workspace.user_label: email needs the scope amp.api:workspace.members:view"},
		{name: "user label", yaml: "amp_workspace: {user_label: name}", wantErr: `amp_workspace.user_label: "name", want id, email or off`},
		{name: "page size", yaml: "amp_workspace: {page_size: 101}", wantErr: "amp_workspace.page_size: 101, want 1 to 100"},
		{name: "history days", yaml: "amp_workspace: {history_days: 0}", wantErr: "amp_workspace.history_days: 0, want 1 to 365"},
		{name: "budget", yaml: "amp_workspace: {max_requests_per_minute: 0}", wantErr: "amp_workspace.max_requests_per_minute: 0, want 1 to 6000"},
		{name: "interval", yaml: "amp_workspace: {sync_interval: 1s}", wantErr: "amp_workspace.sync_interval: 1s is too short, use at least 10s"},
		{name: "api url", yaml: "amp_workspace: {api_url: 'ftp://x'}", wantErr: `amp_workspace.api_url: "ftp://x", want an http:// or https:// URL`},
		{name: "token url with credentials", yaml: "amp_workspace: {token_url: 'https://id:pw@auth.example/t'}", wantErr: "amp_workspace.token_url: credentials do not belong in the URL"},
		{name: "resource", yaml: "amp_workspace: {resource: 'not a url'}", wantErr: `amp_workspace.resource: "not a url", want an http:// or https:// URL`},
		{name: "listing parameter", yaml: "amp_workspace: {listing_params: {cursor: 'a b'}}", wantErr: `amp_workspace.listing_params.cursor: "a b" is not a query parameter name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadYAML(t, tc.yaml, tc.vars)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, cfg.Workspace)
		})
	}
}

// TestWorkspaceSecretNeverShown: the secret's value is resolved at load
// and never rendered, neither in the YAML of /config nor with %v.
func TestWorkspaceSecretNeverShown(t *testing.T) {
	const secret = "wss-very-secret-value"
	cfg, err := loadYAML(t, "amp_workspace:\n  enabled: true\n  client_id: app_1\n  client_secret_env: WS_SECRET\n", map[string]string{"WS_SECRET": secret})
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.Workspace.ClientSecret) != secret {
		t.Fatal("secret not resolved")
	}
	for name, s := range map[string]string{"yaml": cfg.String(), "%v": strings.Join([]string{
		fmt.Sprintf("%v", cfg.Workspace), fmt.Sprintf("%+v", cfg.Workspace), fmt.Sprintf("%#v", cfg.Workspace.ClientSecret)}, "\n")} {
		if strings.Contains(s, secret) {
			t.Errorf("%s shows the secret:\n%s", name, s)
		}
	}
	if !strings.Contains(cfg.String(), "client_secret_env: WS_SECRET") {
		t.Errorf("the variable's name should be shown:\n%s", cfg.String())
	}
}
