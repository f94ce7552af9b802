package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ws "github.com/amp-exporter/amp-exporter/internal/testsupport/workspacetest"
)

// TestWorkspaceCheckCommand: `workspace check` reads the credentials
// from the file --config.file names and the secret from its file; 0 when
// what came back can be counted, 1 when not, 2 without credentials. The
// secret is in neither output.
func TestWorkspaceCheckCommand(t *testing.T) {
	s := ws.New(ws.Config{Users: 4, Threads: 60}, ws.Options{ClientAuth: ws.AuthPost})
	defer s.Close()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(ws.ClientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(auth string) string {
		p := filepath.Join(dir, auth+".yaml")
		y := "amp_workspace:\n  api_url: " + s.URL + "\n  token_url: " + s.TokenURL() + "\n  client_id: " + ws.ClientID +
			"\n  client_secret_file: " + secretFile + "\n  client_auth: " + auth + "\n"
		if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"post", []string{"--config.file=" + write("post"), "workspace", "check"}, 0, "result: countable"},
		{"basic refused", []string{"--config.file=" + write("basic"), "workspace", "check"}, 1, "try client_auth: post"},
		{"no credentials", []string{"workspace", "check"}, 2, "no credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tc.args, &out, &errOut); code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errOut.String())
			}
			all := out.String() + errOut.String()
			if !strings.Contains(all, tc.want) {
				t.Errorf("no %q in\n%s", tc.want, all)
			}
			if strings.Contains(all, ws.ClientSecret) || strings.Contains(all, "wsat_") {
				t.Errorf("a credential in the output:\n%s", all)
			}
		})
	}
	if s.NonGET() != 0 {
		t.Fatalf("%d non-GET requests", s.NonGET())
	}
}
