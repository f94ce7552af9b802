package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func loadYAML(t *testing.T, yaml string, vars map[string]string) (*Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(p, testEnv(vars))
}

func TestAmpServerDefaults(t *testing.T) {
	cfg, err := Load("", testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.AmpServer
	if a.Enabled != AmpServerAuto || a.URL != DefaultAmpURL || time.Duration(a.SyncInterval) != time.Minute ||
		time.Duration(a.FullSyncInterval) != 6*time.Hour || !a.IncludeArchived || a.MaxConcurrency != 4 {
		t.Fatalf("defaults %+v", a)
	}
	cfg, err = Load("", testEnv(map[string]string{"AMP_URL": "http://127.0.0.1:8080"}))
	if err != nil || cfg.AmpServer.URL != "http://127.0.0.1:8080/" {
		t.Fatalf("AMP_URL: %v %q", err, cfg.AmpServer.URL)
	}
}

func TestAmpServerConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
		check               func(t *testing.T, a AmpServerConfig)
	}{
		{name: "off", yaml: "amp_server: {enabled: false}", check: func(t *testing.T, a AmpServerConfig) {
			if a.Enabled != AmpServerOff {
				t.Errorf("enabled %q", a.Enabled)
			}
		}},
		{name: "on with 2s", yaml: "amp_server: {enabled: true, sync_interval: 2s, url: 'http://h:1', installation_id: i-1, api_key_file: ~/k}",
			check: func(t *testing.T, a AmpServerConfig) {
				if a.Enabled != AmpServerOn || time.Duration(a.SyncInterval) != 2*time.Second || a.URL != "http://h:1/" ||
					a.InstallationID != "i-1" || a.APIKeyFile != "/home/dev/k" {
					t.Errorf("%+v", a)
				}
			}},
		{name: "url wins over AMP_URL", yaml: "amp_server: {url: 'https://a.example/'}", check: func(t *testing.T, a AmpServerConfig) {
			if a.URL != "https://a.example/" {
				t.Errorf("url %q", a.URL)
			}
		}},
		{name: "tls", yaml: "amp_server:\n  http_client:\n    tls_config: {insecure_skip_verify: true}\n    proxy_from_environment: false\n    proxy_url: http://proxy:3128\n",
			check: func(t *testing.T, a AmpServerConfig) {
				if !a.HTTPClient.TLSConfig.InsecureSkipVerify || a.HTTPClient.ProxyURL.String() != "http://proxy:3128" {
					t.Errorf("%+v", a.HTTPClient)
				}
			}},
		{name: "bad enabled", yaml: "amp_server: {enabled: maybe}", wantErr: "amp_server.enabled"},
		{name: "too fast", yaml: "amp_server: {sync_interval: 500ms}", wantErr: "amp_server.sync_interval"},
		{name: "full shorter", yaml: "amp_server: {sync_interval: 1h, full_sync_interval: 1m}", wantErr: "amp_server.full_sync_interval"},
		{name: "bad url", yaml: "amp_server: {url: 'ftp://x'}", wantErr: "amp_server.url"},
		{name: "key in url", yaml: "amp_server: {url: 'https://u:p@x/'}", wantErr: "credentials"},
		{name: "concurrency", yaml: "amp_server: {max_concurrency: 0}", wantErr: "amp_server.max_concurrency"},
		{name: "day bills by default", yaml: "amp_server: {}", check: func(t *testing.T, a AmpServerConfig) {
			if time.Duration(a.DayBillsHorizon) != 35*24*time.Hour {
				t.Errorf("day_bills_horizon %s", a.DayBillsHorizon)
			}
		}},
		{name: "a day of day bills", yaml: "amp_server: {day_bills_horizon: 1d}", check: func(t *testing.T, a AmpServerConfig) {
			if time.Duration(a.DayBillsHorizon) != 24*time.Hour {
				t.Errorf("day_bills_horizon %s", a.DayBillsHorizon)
			}
		}},
		{name: "day bills too short", yaml: "amp_server: {day_bills_horizon: 1h}", wantErr: "amp_server.day_bills_horizon"},
		{name: "day bills too far", yaml: "amp_server: {day_bills_horizon: 400d}", wantErr: "amp_server.day_bills_horizon"},
		{name: "unknown key", yaml: "amp_server: {api_key: x}", wantErr: `unknown key "api_key" in amp_server`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadYAML(t, tc.yaml, map[string]string{"AMP_URL": "http://env:1/"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, cfg.AmpServer)
		})
	}
}
