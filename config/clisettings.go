package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"

	"github.com/amp-exporter/amp-exporter/internal/regfile"
)

// The Amp CLI's settings. An administrator's managed-settings.json (in
// /etc/ampcode, /Library/Application Support/ampcode on macOS,
// %ProgramData%\ampcode on Windows) wins over the user's settings:
// $AMP_SETTINGS_FILE, else ${XDG_CONFIG_HOME:-~/.config}/amp/settings.json
// (settings.jsonc when there is no settings.json), on every OS. Both are
// JSON with comments and trailing commas, a flat object of "amp."-prefixed
// keys; the server URL is "amp.url".

// maxCLISettings bounds the settings file read.
const maxCLISettings = 4 << 20

// cliSettingsFile is where the CLI reads its settings.
func cliSettingsFile(env Env) string {
	if f := env.Getenv("AMP_SETTINGS_FILE"); f != "" {
		return f
	}
	base := env.Getenv("XDG_CONFIG_HOME")
	if base == "" {
		base = filepath.Join(env.Home, ".config")
	}
	return filepath.Join(base, "amp", "settings.json")
}

// managedSettingsDir is where an administrator puts the CLI's managed
// settings ("" where the CLI has none); a variable for tests.
var managedSettingsDir = func(env Env) string {
	switch runtime.GOOS {
	case "darwin":
		return "/Library/Application Support/ampcode"
	case "windows":
		if d := env.Getenv("ProgramData"); d != "" {
			return filepath.Join(d, "ampcode")
		}
		return `C:\ProgramData\ampcode`
	case "linux", "android", "freebsd", "netbsd", "openbsd":
		return "/etc/ampcode"
	}
	return ""
}

// cliSettingsURL returns amp.url from the CLI's settings (managed, then
// the user's) and the file it came from; "" when no file has the key.
func cliSettingsURL(env Env) (url, file string, err error) {
	if dir := managedSettingsDir(env); dir != "" {
		file = filepath.Join(dir, "managed-settings.json")
		b, err := regfile.ReadFile(file, maxCLISettings)
		switch {
		case err == nil:
			if url, err := settingsURL(b, file); err != nil || url != "" {
				return url, file, err
			}
		case !errors.Is(err, fs.ErrNotExist):
			return "", file, err
		}
	}
	file = cliSettingsFile(env)
	b, err := regfile.ReadFile(file, maxCLISettings)
	if errors.Is(err, fs.ErrNotExist) && env.Getenv("AMP_SETTINGS_FILE") == "" {
		file = filepath.Join(filepath.Dir(file), "settings.jsonc")
		b, err = regfile.ReadFile(file, maxCLISettings)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", file, err
	}
	url, err = settingsURL(b, file)
	return url, file, err
}

// settingsURL reads amp.url from a settings file's content.
func settingsURL(b []byte, file string) (url string, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(stripJSONC(b), &m); err != nil || m == nil {
		return "", fmt.Errorf("the Amp CLI's settings %q are not a JSON object", file)
	}
	raw, ok := m["amp.url"]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	if err := json.Unmarshal(raw, &url); err != nil {
		return "", fmt.Errorf("the Amp CLI's settings %q: amp.url is not a string", file)
	}
	return url, nil
}

// stripJSONC turns JSON with comments (// and /* */) and trailing commas
// into JSON: comments become spaces, a comma before a closing bracket is
// dropped; strings are copied as they are.
func stripJSONC(in []byte) []byte {
	out := make([]byte, 0, len(in))
	comma := -1 // index in out of a comma not yet followed by a value
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '"':
			comma = -1
			j := i + 1
			for j < len(in) && in[j] != '"' {
				if in[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(in) {
				return append(out, in[i:]...) // unterminated: let the decoder say so
			}
			out = append(out, in[i:j+1]...)
			i = j
		case c == '/' && i+1 < len(in) && in[i+1] == '/':
			for i < len(in) && in[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '/' && i+1 < len(in) && in[i+1] == '*':
			i += 2
			for i+1 < len(in) && !(in[i] == '*' && in[i+1] == '/') {
				i++
			}
			i++ // at the closing '/'
			out = append(out, ' ')
		case c == ',':
			comma = len(out)
			out = append(out, c)
		case c == '}' || c == ']':
			if comma >= 0 {
				out[comma] = ' '
				comma = -1
			}
			out = append(out, c)
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			out = append(out, c)
		default:
			comma = -1
			out = append(out, c)
		}
	}
	return out
}
