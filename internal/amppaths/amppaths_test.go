package amppaths

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

func envOf(home string, vars map[string]string) Env {
	return Env{Getenv: func(k string) string { return vars[k] }, Home: home}
}

func TestHomeAlwaysPerOS(t *testing.T) {
	want := runtime.GOOS == "darwin" || runtime.GOOS == "windows"
	if HomeAlways != want {
		t.Fatalf("HomeAlways = %v on %s, want %v", HomeAlways, runtime.GOOS, want)
	}
}

func TestDataDirsAndSecrets(t *testing.T) {
	home := filepath.FromSlash("/home/dev")
	j := filepath.Join
	tests := []struct {
		name       string
		vars       map[string]string
		homeAlways bool
		want       []string
	}{
		{"linux, no XDG", nil, false, []string{j(home, ".local", "share", "amp")}},
		{"linux, XDG", map[string]string{"XDG_DATA_HOME": "/xdg"}, false, []string{j("/xdg", "amp")}},
		{"mac/windows, no XDG", nil, true, []string{j(home, ".local", "share", "amp")}},
		{"mac/windows, XDG", map[string]string{"XDG_DATA_HOME": "/xdg"}, true,
			[]string{j("/xdg", "amp"), j(home, ".local", "share", "amp")}},
		{"mac/windows, XDG is the default", map[string]string{"XDG_DATA_HOME": j(home, ".local", "share") + string(filepath.Separator)}, true,
			[]string{j(home, ".local", "share", "amp")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dataDirs(envOf(home, tt.vars), tt.homeAlways); !slices.Equal(got, tt.want) {
				t.Errorf("dataDirs = %q, want %q", got, tt.want)
			}
		})
	}
	// The exported functions follow this OS's switch.
	vars := map[string]string{"XDG_DATA_HOME": "/xdg"}
	want := dataDirs(envOf(home, vars), HomeAlways)
	if got := DataDirs(envOf(home, vars)); !slices.Equal(got, want) {
		t.Errorf("DataDirs = %q, want %q", got, want)
	}
	got := SecretsFiles(envOf(home, vars))
	if len(got) != len(want) {
		t.Fatalf("SecretsFiles = %q for data dirs %q", got, want)
	}
	for i := range got {
		if got[i] != j(want[i], "secrets.json") {
			t.Errorf("SecretsFiles[%d] = %q, want %q", i, got[i], j(want[i], "secrets.json"))
		}
	}
}

func TestThreadDirs(t *testing.T) {
	home := t.TempDir()
	xdg := t.TempDir()
	homeThreads := filepath.Join(home, ".local", "share", "amp", "threads")
	xdgThreads := filepath.Join(xdg, "amp", "threads")
	mk := func(t *testing.T, d string) {
		t.Helper()
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rm := func(t *testing.T) {
		t.Helper()
		for _, d := range []string{filepath.Join(home, ".local"), filepath.Join(xdg, "amp")} {
			if err := os.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
		}
	}
	withXDG := map[string]string{"XDG_DATA_HOME": xdg}
	tests := []struct {
		name       string
		setup      func(t *testing.T)
		vars       map[string]string
		homeAlways bool
		want       []string
	}{
		{"AMP_THREADS_DIR wins", nil, map[string]string{"AMP_THREADS_DIR": "/data/threads", "XDG_DATA_HOME": xdg}, true, []string{"/data/threads"}},
		{"one candidate, missing: still watched", nil, nil, true, []string{homeThreads}},
		{"linux, XDG: home not looked at", func(t *testing.T) { mk(t, homeThreads) }, withXDG, false, []string{xdgThreads}},
		{"mac/windows, both missing: the XDG one", nil, withXDG, true, []string{xdgThreads}},
		{"mac/windows, only home exists", func(t *testing.T) { mk(t, homeThreads) }, withXDG, true, []string{homeThreads}},
		{"mac/windows, only XDG exists", func(t *testing.T) { mk(t, xdgThreads) }, withXDG, true, []string{xdgThreads}},
		{"mac/windows, both exist", func(t *testing.T) { mk(t, xdgThreads); mk(t, homeThreads) }, withXDG, true, []string{xdgThreads, homeThreads}},
		{"mac/windows, one directory under two names", func(t *testing.T) {
			mk(t, homeThreads)
			mk(t, filepath.Dir(xdgThreads))
			if err := os.Symlink(homeThreads, xdgThreads); err != nil {
				t.Fatal(err)
			}
		}, withXDG, true, []string{xdgThreads}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm(t)
			if tt.setup != nil {
				tt.setup(t)
			}
			if got := threadDirs(envOf(home, tt.vars), tt.homeAlways); !slices.Equal(got, tt.want) {
				t.Errorf("threadDirs = %q, want %q", got, tt.want)
			}
		})
	}
}
