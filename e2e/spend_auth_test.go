//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// The spend's endpoints are behind --web.config.file as /metrics is:
// without credentials 401, and `report --exporter` and `statusline` pass
// the user and password of their URL (the report never prints it; the
// statusline without them prints nothing).
func TestSpendEndpointsBehindBasicAuth(t *testing.T) {
	const user, pass = "e2e", "correct horse battery staple"
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webCfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webCfg, []byte(fmt.Sprintf("basic_auth_users:\n  %s: %q\n", user, hash)), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyFixtures(t, dir, "usage-era.json")
	e := startExporter(t, exporterOpts{threadsDir: dir, args: []string{"--web.config.file=" + webCfg}, user: user, pass: pass})
	anon := *e
	anon.user, anon.pass = "", ""
	for _, path := range []string{"/api/ledger", "/api/spend", "/"} {
		if code, _, err := anon.get(path); err != nil || code != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d %v, want 401", path, code, err)
		}
		if code, _, err := e.get(path); err != nil || code != http.StatusOK {
			t.Errorf("GET %s with credentials: %d %v, want 200", path, code, err)
		}
	}
	withAuth := strings.Replace(e.base, "http://", "http://"+url.UserPassword(user, pass).String()+"@", 1)
	out, err := exec.Command(exporterBin, "report", "session", "--json", "--exporter", withAuth).Output()
	if err != nil || !strings.Contains(string(out), `"sessionId": "T-019c4811-2a5e-7c3d-8e21-5b6f0a9d4c11"`) {
		t.Errorf("report --exporter with credentials: %v\n%s", err, out)
	}
	refused, err := exec.Command(exporterBin, "report", "--exporter", strings.Replace(withAuth, "battery", "wrong", 1)).CombinedOutput()
	if err == nil || !strings.Contains(string(refused), "401") || strings.Contains(string(refused), "staple") {
		t.Errorf("report --exporter with a wrong password: %v %q", err, refused)
	}
	if out, err := exec.Command(exporterBin, "statusline", "--exporter", withAuth).Output(); err != nil || !strings.Contains(string(out), " today · ") {
		t.Errorf("statusline with credentials: %q %v", out, err)
	}
	if out, err := exec.Command(exporterBin, "statusline", "--exporter", e.base).CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("statusline without credentials: %q %v, want nothing and exit 0", out, err)
	}
}
