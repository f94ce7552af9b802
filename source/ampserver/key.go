package ampserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Key is where the API key comes from. Read returns the key; it reads its
// source again on every call, so a rotated key or a new login is picked
// up. Where names the source for logs; it never holds the key.
type Key struct {
	Where string
	Read  func() (string, error)
}

// KeyEnv is what key discovery looks at.
type KeyEnv struct {
	Getenv func(string) string
	Home   string
}

// AmpDataDir is the Amp CLI's data folder: ${XDG_DATA_HOME:-~/.local/share}/amp.
// (A per-OS version can replace this one function.)
func AmpDataDir(env KeyEnv) string {
	if d := env.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "amp")
	}
	return filepath.Join(env.Home, ".local", "share", "amp")
}

// maxKeyFile bounds a key file or secrets.json read.
const maxKeyFile = 1 << 20

// ErrNoKey says no key was found anywhere.
var ErrNoKey = errors.New("no Amp API key found")

// FindKey looks for the key the way the Amp CLI does, with the exporter's
// own file first: apiKeyFile when set (it must be readable), else
// $AMP_API_KEY, else the CLI's secrets.json entry "apiKey@<url>".
// Errors never contain the key.
func FindKey(apiKeyFile, url string, env KeyEnv) (Key, error) {
	if apiKeyFile != "" {
		read := func() (string, error) { return readKeyFile(apiKeyFile) }
		if _, err := read(); err != nil {
			return Key{}, err
		}
		return Key{Where: "api_key_file", Read: read}, nil
	}
	if k := strings.TrimSpace(env.Getenv("AMP_API_KEY")); k != "" {
		return Key{Where: "AMP_API_KEY", Read: func() (string, error) { return k, nil }}, nil
	}
	secrets := filepath.Join(AmpDataDir(env), "secrets.json")
	read := func() (string, error) { return readSecrets(secrets, url) }
	if _, err := read(); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNoKey) {
			return Key{}, ErrNoKey
		}
		return Key{}, err
	}
	return Key{Where: secrets, Read: read}, nil
}

func readKeyFile(path string) (string, error) {
	b, err := readBounded(path)
	if err != nil {
		return "", fmt.Errorf("api key file: %w", err)
	}
	k := strings.TrimSpace(string(b))
	if k == "" {
		return "", fmt.Errorf("api key file %q is empty", path)
	}
	return k, nil
}

func readSecrets(path, url string) (string, error) {
	b, err := readBounded(path)
	if err != nil {
		return "", fmt.Errorf("amp secrets: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		// The decoder's message could quote the file; say only where.
		return "", fmt.Errorf("amp secrets %q: not a JSON object", path)
	}
	for _, k := range []string{"apiKey@" + url, "apiKey@" + strings.TrimSuffix(url, "/")} {
		if v, ok := m[k].(string); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%q has no key for %s: %w", path, url, ErrNoKey)
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("%q is larger than %d bytes", path, maxKeyFile)
	}
	return b, nil
}
