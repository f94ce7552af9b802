//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// TestAmpServerOAuthLogin runs the binary against an Amp server whose login
// is an OAuth session (a token valid 150 s and a rotating refresh token in
// secrets.json), with the server URL only in the Amp CLI's settings.json
// (no AMP_URL): the exporter finds the server and the login as the CLI
// would, refreshes the session (a 150 s token is due halfway between its
// issue and the CLI's 120 s: 15 s in), stores the new tokens keeping the
// other entries and mode 0600, counts the threads, and logs no token.
func TestAmpServerOAuthLogin(t *testing.T) {
	back := ampservertest.New(standinKey, "dev@example.com")
	defer back.Close()
	g := threadgen.New(threadgen.Options{Threads: 5, TotalBytes: 200_000, Seed: 9})
	if err := back.PutGenerated(g, 0, 5); err != nil {
		t.Fatal(err)
	}
	o := ampservertest.NewOAuth(back, standinKey, time.Now, 150*time.Second)
	defer o.Close()
	access, refresh := o.Login()

	data, conf := t.TempDir(), t.TempDir()
	secretsPath := filepath.Join(data, "amp", "secrets.json")
	settingsPath := filepath.Join(conf, "amp", "settings.json")
	for _, d := range []string{filepath.Dir(secretsPath), filepath.Dir(settingsPath)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The CLI keeps a custom URL as typed: no trailing slash.
	secrets, _ := json.MarshalIndent(map[string]string{
		"apiKey@" + o.URL: access, "oauth-refresh-token@" + o.URL: refresh,
		"apiKey@https://ampcode.com/": "sgamp_user_other_server",
	}, "", "  ")
	if err := os.WriteFile(secretsPath, secrets, 0o600); err != nil {
		t.Fatal(err)
	}
	settings := fmt.Sprintf("// written by amp login\n{\n  \"amp.url\": %q, // the server\n  \"amp.notifications.enabled\": false,\n}\n", o.URL)
	if err := os.WriteFile(settingsPath, []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte("amp_server:\n  sync_interval: 2s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantMessages, _ := serverExpect(t, back)
	e := startExporter(t, exporterOpts{
		args: []string{"--config.file=" + cfg},
		env:  []string{"XDG_DATA_HOME=" + data, "XDG_CONFIG_HOME=" + conf, "AMP_URL="},
	})
	e.waitFor(t, 60*time.Second, "sync through the OAuth login, refreshed", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		up, _ := value(mfs, "amp_server_up", nil)
		got, _ := value(mfs, "amp_messages_total", map[string]string{"source": "server"})
		stored, _ := value(mfs, "amp_server_login_refreshes_total", map[string]string{"outcome": "stored"})
		return up == 1 && got == wantMessages && stored >= 1,
			fmt.Sprintf("up %v, messages %v of %v, refreshes stored %v", up, got, wantMessages, stored)
	})
	if rot, _, refused := o.Stats(); rot < 1 || refused != 0 {
		t.Errorf("%d rotations, %d refused; want a refresh", rot, refused)
	}
	b, err := os.ReadFile(secretsPath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["oauth-refresh-token@"+o.URL] == refresh || m["apiKey@"+o.URL] == access || len(m) != 3 ||
		m["apiKey@https://ampcode.com/"] != "sgamp_user_other_server" {
		t.Errorf("secrets.json after the refresh: %d entries, refresh token new %v, access token new %v",
			len(m), m["oauth-refresh-token@"+o.URL] != refresh, m["apiKey@"+o.URL] != access)
	}
	if fi, err := os.Stat(secretsPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secrets.json mode: %v %v", fi.Mode(), err)
	}
	out := e.output.String()
	if !strings.Contains(out, "url_from="+settingsPath) {
		t.Errorf("the log does not say where the URL came from:\n%s", out)
	}
	for _, tok := range []string{access, refresh, m["apiKey@"+o.URL], m["oauth-refresh-token@"+o.URL]} {
		if strings.Contains(out, tok) {
			t.Fatal("a token is in the exporter's output")
		}
	}
}
