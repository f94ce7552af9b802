package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testEnv(vars map[string]string) Env {
	return Env{Getenv: func(k string) string { return vars[k] }, Home: "/home/dev"}
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "amp-exporter.yml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaultThreadsDir(t *testing.T) {
	tests := []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"AMP_THREADS_DIR": "/data/threads", "XDG_DATA_HOME": "/xdg"}, "/data/threads"},
		{map[string]string{"XDG_DATA_HOME": "/xdg"}, "/xdg/amp/threads"},
		{map[string]string{}, "/home/dev/.local/share/amp/threads"},
	}
	for _, tt := range tests {
		cfg, err := Load("", testEnv(tt.vars))
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Threads.Dirs) != 1 || cfg.Threads.Dirs[0] != tt.want {
			t.Errorf("env %v: dirs %v, want [%s]", tt.vars, cfg.Threads.Dirs, tt.want)
		}
	}
}

func TestLoadValidFile(t *testing.T) {
	path := writeConfig(t, `
threads:
  dirs: [~/amp/threads, /srv/threads, /srv/threads/]
  resync_interval: 10m
  poll_interval: 2s
limits:
  max_label_values: 50
  max_file_bytes: 10MB
`)
	cfg, err := Load(path, testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Threads.Dirs, ","); got != "/home/dev/amp/threads,/srv/threads" {
		t.Errorf("dirs = %s", got)
	}
	if time.Duration(cfg.Threads.ResyncInterval) != 10*time.Minute || time.Duration(cfg.Threads.PollInterval) != 2*time.Second {
		t.Errorf("intervals = %v %v", cfg.Threads.ResyncInterval, cfg.Threads.PollInterval)
	}
	if cfg.Limits.MaxLabelValues != 50 || cfg.Limits.MaxFileBytes != 10_000_000 {
		t.Errorf("limits = %+v", cfg.Limits)
	}
}

func TestEmptyFileGivesDefaults(t *testing.T) {
	cfg, err := Load(writeConfig(t, "# nothing\n"), testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.MaxFileBytes != 64<<20 || cfg.Limits.MaxLabelValues != 100 || time.Duration(cfg.Threads.ResyncInterval) != 5*time.Minute {
		t.Errorf("defaults = %+v", cfg)
	}
}

func TestErrorsNameKeyAndFile(t *testing.T) {
	tests := []struct {
		content string
		want    []string
	}{
		{"threads:\n  dir: /x\n", []string{`unknown key "dir" in threads`, "line 2"}},
		{"thread:\n  dirs: [/x]\n", []string{`unknown key "thread" in the top level`}},
		{"limits:\n  max_file_bytes: 12 parsecs\n", []string{`unknown unit "parsecs"`}},
		{"limits:\n  max_label_values: 0\n", []string{"limits.max_label_values: 0, must be at least 1"}},
		{"threads:\n  resync_interval: 10ms\n", []string{"threads.resync_interval: 10ms is too short"}},
		{"threads:\n  resync_interval: soon\n", []string{"soon"}},
		{"threads:\n  dirs: ['']\n", []string{"threads.dirs: an entry is empty"}},
		{"threads: [\n", []string{"yaml"}},
	}
	for _, tt := range tests {
		path := writeConfig(t, tt.content)
		_, err := Load(path, testEnv(nil))
		if err == nil {
			t.Errorf("%q: no error", tt.content)
			continue
		}
		for _, want := range append(tt.want, path) {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q: error %q does not contain %q", tt.content, err, want)
			}
		}
	}
}

func TestParseByteSize(t *testing.T) {
	tests := map[string]ByteSize{"64MiB": 64 << 20, "500MB": 500e6, "1048576": 1 << 20, "1.5KiB": 1536, "2gib": 2 << 30, "7 B": 7}
	for in, want := range tests {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MiB", "-1MiB", "12 parsecs", "1e3"} {
		if _, err := ParseByteSize(bad); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", bad)
		}
	}
}

func TestExampleConfigIsValidAndComplete(t *testing.T) {
	path := filepath.Join("..", "config.example.yaml")
	cfg, err := Load(path, testEnv(nil))
	if err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	// Every key the exporter knows appears in the example: render the
	// loaded config and check each key is written in the example.
	example, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(cfg.String(), "\n") {
		key, _, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || strings.HasPrefix(key, "-") {
			continue
		}
		if !strings.Contains(string(example), key+":") {
			t.Errorf("config.example.yaml does not document %q", key)
		}
	}
}

func TestPricingSection(t *testing.T) {
	path := writeConfig(t, `
pricing:
  file: ~/prices.json
  models:
    my-model: {input: 1.5, output: 6}
    other: {input: 1, output: 2, cache_read: 0.1, cache_creation: 1.25}
`)
	cfg, err := Load(path, testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Pricing.File != "/home/dev/prices.json" || *cfg.Pricing.Models["my-model"].Output != 6 || cfg.Pricing.Models["my-model"].CacheRead != nil {
		t.Fatalf("%+v", cfg.Pricing)
	}
	for _, bad := range []string{
		"pricing:\n  models:\n    m: {input: 1}\n",
		"pricing:\n  models:\n    m: {input: 1, output: -2}\n",
		"pricing:\n  models:\n    m: {input: 1, output: 2, cache_writes: 3}\n",
	} {
		if _, err := Load(writeConfig(t, bad), testEnv(nil)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestAmySection(t *testing.T) {
	path := writeConfig(t, `
amy:
  - name: prod
    base_url: https://amy.example.com
    api_key: ${AMY_API_KEY}
    turns: [turn_1, turn_2]
    proxy: {listen_address: "127.0.0.1:9975"}
  - name: staging
    base_url: http://amy.staging:8080/
    api_key_file: ./amy.key
`)
	cfg, err := Load(path, testEnv(map[string]string{"AMY_API_KEY": "sk-live-very-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Amy[0].APIKey != "sk-live-very-secret" || len(cfg.Amy[0].Turns) != 2 || cfg.Amy[1].APIKeyFile == "" {
		t.Fatalf("%+v", cfg.Amy)
	}
	if time.Duration(cfg.Amy[0].IdleTimeout) != time.Minute || time.Duration(cfg.Amy[0].TurnTimeout) != 2*time.Hour {
		t.Errorf("defaults: %+v", cfg.Amy[0])
	}
	out := cfg.String()
	if strings.Contains(out, "sk-live") || !strings.Contains(out, "<secret>") {
		t.Fatalf("the key is printed by the config dump:\n%s", out)
	}
	for content, want := range map[string]string{
		"amy:\n  - {name: a, base_url: 'ftp://x'}\n":                                       "base_url",
		"amy:\n  - {name: 'bad name', base_url: 'http://x'}\n":                             "name",
		"amy:\n  - {name: a, base_url: 'http://x'}\n  - {name: a, base_url: 'http://y'}\n": "used twice",
		"amy:\n  - {name: a, base_url: 'http://x', api_key: k, api_key_file: f}\n":         "not both",
		"amy:\n  - {name: a, base_url: 'http://u:p@x'}\n":                                  "credentials",
		"amy:\n  - {name: a, base_url: 'http://x', turns: ['a/b']}\n":                      "turn id",
		"amy:\n  - {name: a, base_url: 'http://x', apikey: k}\n":                           `unknown key "apikey"`,
	} {
		_, err := Load(writeConfig(t, content), testEnv(nil))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to mention %q", content, err, want)
		}
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := Secret("sk-live-123")
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %s", s, s), s.LogValue().String()} {
		if strings.Contains(out, "sk-live") {
			t.Fatalf("secret printed: %q", out)
		}
	}
}
