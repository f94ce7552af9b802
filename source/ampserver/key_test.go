package ampserver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindKey(t *testing.T) {
	home := t.TempDir()
	xdg := t.TempDir()
	writeSecrets := func(dir, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "amp"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "amp", "secrets.json"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeSecrets(filepath.Join(home, ".local", "share"), `{"apiKey@https://ampcode.com/":"key-from-home"}`)
	writeSecrets(xdg, `{"apiKey@https://ampcode.com/":"key-from-xdg","apiKey@http://127.0.0.1:9/":"key-local"}`)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("key-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, url string
		vars            map[string]string
		want, where     string
		err             error
	}{
		{name: "file first", file: keyFile, url: "https://ampcode.com/", vars: map[string]string{"AMP_API_KEY": "env"}, want: "key-from-file", where: "api_key_file"},
		{name: "env before secrets", url: "https://ampcode.com/", vars: map[string]string{"AMP_API_KEY": "key-env"}, want: "key-env", where: "AMP_API_KEY"},
		{name: "secrets under home", url: "https://ampcode.com/", want: "key-from-home", where: "secrets.json"},
		{name: "secrets under XDG_DATA_HOME", url: "https://ampcode.com/", vars: map[string]string{"XDG_DATA_HOME": xdg}, want: "key-from-xdg", where: "secrets.json"},
		{name: "per server url", url: "http://127.0.0.1:9/", vars: map[string]string{"XDG_DATA_HOME": xdg}, want: "key-local", where: "secrets.json"},
		{name: "no key for that url", url: "https://other.example/", err: ErrNoKey},
		{name: "no secrets at all", url: "https://ampcode.com/", vars: map[string]string{"XDG_DATA_HOME": t.TempDir()}, err: ErrNoKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := KeyEnv{Getenv: func(k string) string { return tc.vars[k] }, Home: home}
			k, err := FindKey(tc.file, tc.url, env)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := k.Read()
			if err != nil || got != tc.want || !strings.HasSuffix(k.Where, tc.where) {
				t.Fatalf("key %q from %q (%v), want %q from %q", got, k.Where, err, tc.want, tc.where)
			}
			if strings.Contains(k.Where, got) {
				t.Fatal("Where names the key")
			}
		})
	}
	// A missing api_key_file is an error, not a fallback.
	if _, err := FindKey(filepath.Join(home, "nope"), "https://ampcode.com/", KeyEnv{Getenv: func(string) string { return "" }, Home: home}); err == nil || errors.Is(err, ErrNoKey) {
		t.Fatalf("missing key file: %v", err)
	}
}
