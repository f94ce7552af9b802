package app

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	ws "github.com/amp-exporter/amp-exporter/internal/testsupport/workspacetest"
	"github.com/amp-exporter/amp-exporter/source/workspace"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// exposition is the registry's /metrics text, through the gatherer every
// exposing path uses.
func exposition(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := collector.WithoutEmptyRepository(reg).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// wiredWorkspace is the workspace source as the app builds it, with the
// Amp collector beside it on one registry.
func wiredWorkspace(t *testing.T, s *ws.Server, dir string) (*workspaceSource, *prometheus.Registry) {
	t.Helper()
	cfg := config.Default()
	w := &cfg.Workspace
	w.Enabled = true
	w.APIURL, w.TokenURL = s.URL, s.TokenURL()
	w.ClientID, w.ClientSecret = ws.ClientID, config.Secret(ws.ClientSecret)
	w.MaxRequestsPerMinute = 6000
	w.SyncInterval = model.Duration(time.Hour)
	reg := prometheus.NewRegistry()
	labels := ampstore.NewLabelCap(100, nil)
	local := ampstore.NewThreadStore(ampstore.StoreOptions{Labels: labels, Repositories: ampstore.NewRepositories(nil)})
	reg.MustRegister(collector.NewAmpCollector(local, ampstore.NewStreamStore(labels, time.Now)))
	src, err := newWorkspaceSource(cfg, slog.New(slog.DiscardHandler), reg, labels, local.Repositories(), dir)
	if err != nil || src == nil {
		t.Fatalf("workspace source: %v %v", src, err)
	}
	return src, reg
}

// runOnce runs the source until its first sync ends, then stops it (the
// final save included).
func runOnce(t *testing.T, src *workspaceSource) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	r := src.runner()
	go func() { done <- r.Run(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	for !src.metrics.SyncedOnce() {
		if time.Now().After(deadline) {
			t.Fatal("no sync completed in a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWorkspaceSourceWired: the source as the app wires it counts into
// source="workspace" series with a user label beside the other sources'
// families; neither the secret nor the token in a remote reaches
// /metrics or the state; restarted from its state it shows the same
// series before any sync, and its first sync asks no thread's usage.
func TestWorkspaceSourceWired(t *testing.T) {
	// The source syncs on the wall clock: the workspace's present is now.
	s := ws.New(ws.Config{Users: 4, Threads: 200, Days: 120, Now: time.Now().UTC()}, ws.Options{})
	defer s.Close()
	dir := t.TempDir()
	src, reg := wiredWorkspace(t, s, dir)
	if out := exposition(t, reg); strings.Contains(out, `source="workspace"`) {
		t.Error("workspace series shown before the first sync")
	}
	runOnce(t, src)
	out := exposition(t, reg)
	for _, want := range []string{`amp_tokens_total{model=`, `source="workspace"`, `user="` + s.UserID(0) + `"`,
		`amp_workspace_up 1`, `repository="github.com/acme/payments"`, `amp_workspace_daily_usage_usd_total{`} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	// The usage ledger the report and the landing page read holds the
	// rollup's days.
	led := storesLedger{workspace: src.store}
	var usd int64
	for _, e := range led.Ledger() {
		usd += e.Cost
	}
	if want := s.Rollup().Total.USD(); math.Abs(float64(usd)/1e10-want) > 1e-6 {
		t.Errorf("the ledger holds %v USD, the rollup %v", float64(usd)/1e10, want)
	}
	state, err := os.ReadFile(filepath.Join(dir, workspace.StateName))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(state))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{ws.RemoteSecret, ws.ClientSecret, "x-access-token"} {
		if strings.Contains(out, secret) {
			t.Errorf("/metrics holds %q", secret)
		}
		if bytes.Contains(plain, []byte(secret)) {
			t.Errorf("the state holds %q", secret)
		}
	}

	// Restarted from the state: the same series at once, and nothing
	// fetched again.
	src2, reg2 := wiredWorkspace(t, s, dir)
	series := func(text string) string {
		var keep []string
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, `source="workspace"`) || strings.HasPrefix(l, "amp_workspace_daily") || strings.HasPrefix(l, "amp_workspace_lines") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if got, want := series(exposition(t, reg2)), series(out); got != want {
		t.Errorf("restored series differ:\n%s\nwant\n%s", got, want)
	}
	s.ResetRequests()
	runOnce(t, src2)
	if n := s.Count(ws.RouteUsage); n != 0 {
		t.Errorf("%d usage requests after a restart, want 0", n)
	}
	if got, want := series(exposition(t, reg2)), series(out); got != want {
		t.Errorf("series after the restart's sync differ:\n%s\nwant\n%s", got, want)
	}
}

// TestWorkspaceAppLifecycle: an exporter whose storage directory holds a
// state from before the workspace source (no workspace file) starts
// with the source on, counts the workspace, stops in order (its state
// saved), and restarted shows the same workspace series before its first
// sync, which asks for no thread's usage.
func TestWorkspaceAppLifecycle(t *testing.T) {
	s := ws.New(ws.Config{Users: 4, Threads: 100, Days: 120, Now: time.Now().UTC()}, ws.Options{})
	defer s.Close()
	dir, storage := t.TempDir(), t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(ws.ClientSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\n", dir)
	// A state from before: the other sources only.
	old := buildTestApp(t, base, storage)
	if err := old.run()(); err != nil {
		t.Fatal(err)
	}
	cfgText := base + fmt.Sprintf("amp_workspace:\n  enabled: true\n  api_url: %s\n  token_url: %s\n  client_id: %s\n  client_secret_file: %q\n  sync_interval: 1h\n  max_requests_per_minute: 6000\n",
		s.URL, s.TokenURL(), ws.ClientID, secret)
	series := func(a *App) string {
		var keep []string
		for _, l := range strings.Split(exposition(t, a.reg), "\n") {
			if strings.Contains(l, `source="workspace"`) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	first := buildTestApp(t, cfgText, storage)
	stop := first.run()
	deadline := time.Now().Add(60 * time.Second)
	for !first.workspace.metrics.SyncedOnce() {
		if time.Now().After(deadline) {
			t.Fatal("no workspace sync in a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	want := series(first.App)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want, `amp_cost_usd_total{`) {
		t.Fatalf("no workspace cost series:\n%s", want)
	}
	s.ResetRequests()
	second := buildTestApp(t, cfgText, storage)
	if got := series(second.App); got != want {
		t.Errorf("restored series differ:\n%s\nwant\n%s", got, want)
	}
	stop = second.run()
	deadline = time.Now().Add(60 * time.Second)
	for !second.workspace.metrics.SyncedOnce() {
		if time.Now().After(deadline) {
			t.Fatal("no workspace sync in a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := s.Count(ws.RouteUsage); n != 0 {
		t.Errorf("%d usage requests after the restart, want 0", n)
	}
	if n := s.NonGET(); n != 0 {
		t.Errorf("%d requests other than GET", n)
	}
}
