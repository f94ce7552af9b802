//go:build unix

package ampserver

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO where a login or key file belongs is refused at once: reading one
// would wait for a writer, hanging start-up, every sync and shutdown.
func TestFindKeyRefusesFIFO(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, fifo string) (apiKeyFile string, env KeyEnv)
	}{
		{name: "secrets.json", setup: func(t *testing.T, fifo string) (string, KeyEnv) {
			data := t.TempDir()
			if err := os.MkdirAll(filepath.Join(data, "amp"), 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(data, "amp", "secrets.json")
			mkfifo(t, p)
			return "", KeyEnv{Getenv: envOf(map[string]string{"XDG_DATA_HOME": data}), Home: t.TempDir()}
		}},
		{name: "api_key_file", setup: func(t *testing.T, fifo string) (string, KeyEnv) {
			mkfifo(t, fifo)
			return fifo, KeyEnv{Getenv: envOf(nil), Home: t.TempDir()}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "fifo")
			keyFile, env := tc.setup(t, fifo)
			done := make(chan error, 1)
			go func() { _, err := FindKey(keyFile, "https://ampcode.com/", env); done <- err }()
			select {
			case err := <-done:
				if err == nil || errors.Is(err, ErrNoKey) || !errors.Is(err, errNotRegular) {
					t.Fatalf("err %v, want a refused special file", err)
				}
			case <-time.After(10 * time.Second):
				unblockFIFOs(t)
				t.Fatal("FindKey blocked on a FIFO")
			}
		})
	}
}

var fifos []string

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	fifos = append(fifos, p)
}

// unblockFIFOs opens every FIFO for writing and closes it, so a reader
// stuck on one returns.
func unblockFIFOs(t *testing.T) {
	for _, p := range fifos {
		if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
}
