// Package amppaths knows where the Amp CLI keeps its data on each
// operating system: the legacy thread directory and the login
// (secrets.json) the server source reads.
//
// Read from the CLI's own bundles (@sourcegraph/amp dist/main.js, builds
// 2026-02-10 and 2026-05-04; docs/formats/amp-threads.md §1.1): the thread store and the
// secrets file live under ${XDG_DATA_HOME:-~/.local/share}/amp on every
// OS, while the CLI's platform switch for its other data ignores
// XDG_DATA_HOME on macOS and Windows and always uses ~/.local/share/amp
// there (on Windows ~ is %USERPROFILE%). So on macOS and Windows both
// places are candidates; elsewhere only the XDG one is. The per-OS choice
// lives in build-tagged files.
package amppaths

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Env is what the locations are resolved from: the process environment
// and home directory in production, fixed values in tests.
type Env struct {
	Getenv func(string) string
	Home   string
	// Stat looks a directory up; nil means os.Stat. Only consulted when
	// there is more than one candidate directory.
	Stat func(string) (fs.FileInfo, error)
}

// HomeAlways reports whether, on this OS, the CLI also keeps data in
// ~/.local/share/amp when XDG_DATA_HOME points elsewhere (macOS, Windows).
const HomeAlways = homeAlways

// DataDirs returns the Amp CLI data directories ("<base>/amp") to look in,
// the most likely first, without repeats. They need not exist.
func DataDirs(env Env) []string { return dataDirs(env, HomeAlways) }

func dataDirs(env Env, homeAlways bool) []string {
	home := filepath.Join(env.Home, ".local", "share", "amp")
	xdg := env.Getenv("XDG_DATA_HOME")
	if xdg == "" {
		return []string{home}
	}
	x := filepath.Join(xdg, "amp")
	if !homeAlways || filepath.Clean(x) == filepath.Clean(home) {
		return []string{x}
	}
	return []string{x, home}
}

// ThreadDirs returns the legacy thread directories to watch:
// $AMP_THREADS_DIR (txcript's convention) when set, else "threads" under
// each data directory. Of several candidates it keeps those that exist,
// and of two names for one directory (a symlink) the first, so no thread
// is counted twice; when none exists it returns the first, which the
// watcher then waits for.
func ThreadDirs(env Env) []string { return threadDirs(env, HomeAlways) }

func threadDirs(env Env, homeAlways bool) []string {
	if d := env.Getenv("AMP_THREADS_DIR"); d != "" {
		return []string{d}
	}
	data := dataDirs(env, homeAlways)
	cands := make([]string, len(data))
	for i, d := range data {
		cands[i] = filepath.Join(d, "threads")
	}
	if len(cands) == 1 {
		return cands
	}
	stat := env.Stat
	if stat == nil {
		stat = os.Stat
	}
	var dirs []string
	var infos []fs.FileInfo
next:
	for _, c := range cands {
		fi, err := stat(c)
		if err != nil || !fi.IsDir() {
			continue
		}
		for _, seen := range infos {
			if os.SameFile(seen, fi) {
				continue next
			}
		}
		infos = append(infos, fi)
		dirs = append(dirs, c)
	}
	if len(dirs) == 0 {
		return cands[:1]
	}
	return dirs
}

// SecretsFiles returns where the CLI's file-based login may be, in the
// order to try: the first that exists is the one to read. (With the
// setting experimental.cli.nativeSecretsStorage.enabled the CLI keeps the
// key in the OS keyring instead and none of these holds it.)
func SecretsFiles(env Env) []string {
	data := DataDirs(env)
	files := make([]string, len(data))
	for i, d := range data {
		files[i] = filepath.Join(d, "secrets.json")
	}
	return files
}
