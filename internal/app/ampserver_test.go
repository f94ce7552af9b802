package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/source/ampserver"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// A key the server refuses at start-up and accepts later (the user logged
// in again): the account is named once the key works. It used to be asked
// only once, before the first sync, and never again.
func TestServerSourceNamesTheAccountOnceTheKeyWorks(t *testing.T) {
	srv := ampservertest.New("sgamp_right_key_0123456789", "dev@example.com")
	defer srv.Close()
	keyFile := filepath.Join(t.TempDir(), "amp-key")
	if err := os.WriteFile(keyFile, []byte("sgamp_wrong_key_0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.AmpServer.Enabled = config.AmpServerOn
	cfg.AmpServer.URL = srv.URL
	cfg.AmpServer.APIKeyFile = keyFile
	cfg.AmpServer.SyncInterval = model.Duration(time.Minute)
	env := config.Env{Getenv: func(string) string { return "" }, Home: t.TempDir()}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	labels := ampstore.NewLabelCap(100, nil)
	local := ampstore.NewThreadStore(ampstore.StoreOptions{Labels: labels})
	streams := ampstore.NewStreamStore(labels, time.Now)
	src, err := newServerSource(cfg, env, logger, reg, labels, collector.NewExporterMetrics(reg), local, streams,
		collector.NewAmpCollector(local, streams))
	if err != nil || src == nil {
		t.Fatalf("server source: %v %v", src, err)
	}
	if _, err := src.syncer.Sync(context.Background()); !errors.Is(err, ampserver.ErrAuth) {
		t.Fatalf("first sync: %v, want the key refused", err)
	}
	if name := src.accountName(); name != "" {
		t.Fatalf("account %q named with a refused key", name)
	}
	if err := os.WriteFile(keyFile, []byte("sgamp_right_key_0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := src.syncer.Sync(context.Background()); err != nil {
		t.Fatalf("sync with the key that works: %v", err)
	}
	if name := src.accountName(); name != "dev@example.com" {
		t.Fatalf("account %q, want dev@example.com once the key works", name)
	}
}
