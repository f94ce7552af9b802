package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tests never read the machine's own managed settings.
func init() { managedSettingsDir = func(Env) string { return "" } }

func TestManagedSettingsWin(t *testing.T) {
	managed, xdg := t.TempDir(), t.TempDir()
	saved := managedSettingsDir
	managedSettingsDir = func(Env) string { return managed }
	t.Cleanup(func() { managedSettingsDir = saved })
	if err := os.MkdirAll(filepath.Join(xdg, "amp"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "amp", "settings.json"), []byte(`{"amp.url": "https://user.example"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(managed, "managed-settings.json")
	for _, tc := range []struct {
		name, managed, ampURL, want, from string
	}{
		{name: "no managed file", want: "https://user.example/", from: "settings.json"},
		{name: "managed without amp.url", managed: `{"amp.updates.mode": "disabled"}`, want: "https://user.example/", from: "settings.json"},
		{name: "managed amp.url wins", managed: "{\n  // pinned\n  \"amp.url\": \"https://corp.example\",\n}", want: "https://corp.example/", from: "managed-settings.json"},
		{name: "AMP_URL wins over managed", managed: `{"amp.url": "https://corp.example"}`, ampURL: "http://127.0.0.1:5", want: "http://127.0.0.1:5/", from: "AMP_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(mp)
			if tc.managed != "" {
				if err := os.WriteFile(mp, []byte(tc.managed), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := Load("", testEnv(map[string]string{"XDG_CONFIG_HOME": xdg, "AMP_URL": tc.ampURL}))
			if err != nil || cfg.AmpServer.URL != tc.want || !strings.HasSuffix(cfg.AmpServer.URLFrom, tc.from) {
				t.Fatalf("%v: %q from %q, want %q from …%s", err, cfg.AmpServer.URL, cfg.AmpServer.URLFrom, tc.want, tc.from)
			}
		})
	}
	if err := os.WriteFile(mp, []byte(`{"amp.url": `), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load("", testEnv(map[string]string{"XDG_CONFIG_HOME": xdg})); err == nil || !strings.Contains(err.Error(), "managed-settings.json") {
		t.Fatalf("broken managed settings: %v", err)
	}
}

func TestAmpServerURLLikeTheCLI(t *testing.T) {
	write := func(t *testing.T, dir, name, content string) string {
		t.Helper()
		p := filepath.Join(dir, "amp", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const jsonc = `// Amp CLI settings
{
  /* the server */
  "amp.url": "https://amp.corp.example", // a comment with "quotes"
  "amp.notifications.enabled": false,
  "amp.mcpServers": {"x": {"command": "a//b"},},
}
`
	for _, tc := range []struct {
		name    string
		yaml    string
		vars    func(xdg string) map[string]string
		files   map[string]string // name under $XDG_CONFIG_HOME/amp -> content
		want    string
		from    string // suffix of URLFrom
		wantErr string
	}{
		{name: "default", want: DefaultAmpURL, from: "default"},
		{name: "settings.json with comments and trailing commas", files: map[string]string{"settings.json": jsonc},
			want: "https://amp.corp.example/", from: "settings.json"},
		{name: "settings.jsonc when there is no settings.json", files: map[string]string{"settings.jsonc": jsonc},
			want: "https://amp.corp.example/", from: "settings.jsonc"},
		{name: "settings.json first", files: map[string]string{"settings.json": `{"amp.url": "http://127.0.0.1:7/"}`, "settings.jsonc": jsonc},
			want: "http://127.0.0.1:7/", from: "settings.json"},
		{name: "settings without amp.url", files: map[string]string{"settings.json": `{"amp.notifications.enabled": true}`},
			want: DefaultAmpURL, from: "default"},
		{name: "AMP_URL over settings", files: map[string]string{"settings.json": jsonc},
			vars: func(string) map[string]string { return map[string]string{"AMP_URL": "http://127.0.0.1:9"} },
			want: "http://127.0.0.1:9/", from: "AMP_URL"},
		{name: "amp_server.url over all", yaml: "amp_server: {url: 'https://x.example/'}", files: map[string]string{"settings.json": jsonc},
			vars: func(string) map[string]string { return map[string]string{"AMP_URL": "http://127.0.0.1:9"} },
			want: "https://x.example/", from: "amp_server.url"},
		{name: "AMP_SETTINGS_FILE", files: map[string]string{"other.json": `{"amp.url": "https://other.example"}`, "settings.json": jsonc},
			vars: func(xdg string) map[string]string {
				return map[string]string{"AMP_SETTINGS_FILE": filepath.Join(xdg, "amp", "other.json")}
			},
			want: "https://other.example/", from: "other.json"},
		{name: "broken settings", files: map[string]string{"settings.json": `{"amp.url": `}, wantErr: "amp_server.url: cannot read the server URL from the Amp CLI's settings"},
		{name: "amp.url not a string", files: map[string]string{"settings.json": `{"amp.url": 7}`}, wantErr: "amp.url is not a string"},
		{name: "bad amp.url", files: map[string]string{"settings.json": `{"amp.url": "ftp://x"}`}, wantErr: "settings.json), want an http"},
		{name: "broken settings, source off", yaml: "amp_server: {enabled: false}", files: map[string]string{"settings.json": `nope`},
			want: DefaultAmpURL, from: "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xdg := t.TempDir()
			for name, content := range tc.files {
				write(t, xdg, name, content)
			}
			vars := map[string]string{}
			if tc.vars != nil {
				vars = tc.vars(xdg)
			}
			vars["XDG_CONFIG_HOME"] = xdg
			cfg, err := loadYAML(t, tc.yaml, vars)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := cfg.AmpServer
			if a.URL != tc.want || !strings.HasSuffix(a.URLFrom, tc.from) {
				t.Fatalf("url %q from %q, want %q from …%s", a.URL, a.URLFrom, tc.want, tc.from)
			}
		})
	}
}

func TestCLISettingsUnderHome(t *testing.T) {
	home := t.TempDir()
	p := filepath.Join(home, ".config", "amp", "settings.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"amp.url": "https://home.example"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load("", Env{Getenv: func(string) string { return "" }, Home: home})
	if err != nil || cfg.AmpServer.URL != "https://home.example/" || cfg.AmpServer.URLFrom != p {
		t.Fatalf("%v %q %q", err, cfg.AmpServer.URL, cfg.AmpServer.URLFrom)
	}
}

func TestStripJSONC(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{`{"a": "//not a comment", "b": "/* nor this */"}`, `{"a": "//not a comment", "b": "/* nor this */"}`},
		{"{\"a\": 1, // c\n}", "{\"a\": 1  \n}"},
		{`{"a": [1, 2,], "b": "x\",",}`, `{"a": [1, 2 ], "b": "x\"," }`},
		{`/* x */{"a":/**/1}`, ` {"a": 1}`},
	} {
		if got := string(stripJSONC([]byte(tc.in))); got != tc.want {
			t.Errorf("stripJSONC(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRefreshLogin(t *testing.T) {
	cfg, err := Load("", testEnv(nil))
	if err != nil || !cfg.AmpServer.RefreshLogin {
		t.Fatalf("default refresh_login: %v %v", err, cfg.AmpServer.RefreshLogin)
	}
	cfg, err = loadYAML(t, "amp_server: {refresh_login: false}", nil)
	if err != nil || cfg.AmpServer.RefreshLogin {
		t.Fatalf("refresh_login false: %v %v", err, cfg.AmpServer.RefreshLogin)
	}
	if _, err := loadYAML(t, "amp_server: {refresh_login: sometimes}", nil); err == nil || !strings.Contains(err.Error(), "refresh_login") {
		t.Fatalf("bad refresh_login: %v", err)
	}
}
