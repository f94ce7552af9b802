package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/app"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// startExporter runs the exporter in this process on the configuration
// file and returns its base URL; it stops at the end of the test. opts
// change the options it is built with.
func startExporter(t *testing.T, cfgPath string, opts ...func(*app.Options)) string {
	t.Helper()
	env := config.OSEnv()
	cfg, err := config.Load(cfgPath, env)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	addrs, systemd, webCfg := []string{addr}, false, ""
	o := app.Options{ConfigFile: cfgPath, Env: env, Config: cfg, Logger: slog.New(slog.DiscardHandler),
		TelemetryPath: "/metrics", Web: &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &webCfg},
		Limits: app.ServerLimits{MaxRequests: 4, MaxConnections: 16}}
	for _, opt := range opts {
		opt(&o)
	}
	a, err := app.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("exporter: %v", err)
		}
	})
	base := "http://" + addr
	testutil.WaitUntil(t, "the exporter's first scan", func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}

// generatedThreads writes a corpus of n threads over a few repositories,
// spread over four weeks, and a configuration reading it (no Amp server).
func generatedThreads(t *testing.T, n int) (cfgPath string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "threads")
	g := threadgen.New(threadgen.Options{Threads: n, TotalBytes: int64(n) * 12_000, Seed: 26, Repositories: 4,
		Start: time.Date(2026, 10, 20, 21, 40, 0, 0, time.UTC)})
	if _, err := g.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	cfgPath = filepath.Join(t.TempDir(), "amp-exporter.yml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\n", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgPath
}
