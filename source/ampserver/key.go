package ampserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/amp-exporter/amp-exporter/internal/amppaths"
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

// secretsFiles are where the Amp CLI's login may be, in the order to try
// (per OS: internal/amppaths).
func secretsFiles(env KeyEnv) []string {
	return amppaths.SecretsFiles(amppaths.Env{Getenv: env.Getenv, Home: env.Home})
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
	// The first secrets.json that holds a key for url is the login; a file
	// that exists but cannot be read is an error worth saying.
	var firstErr error
	for _, secrets := range secretsFiles(env) {
		read := func() (string, error) { return readSecrets(secrets, url) }
		_, err := read()
		switch {
		case err == nil:
			return Key{Where: secrets, Read: read}, nil
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNoKey):
		default:
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil {
		return Key{}, firstErr
	}
	return Key{}, ErrNoKey
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
