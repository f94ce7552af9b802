package app

import (
	"context"
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

// gathered sums a family's samples with source="server" (or without a
// source label), and whether any is shown.
func gathered(t *testing.T, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	shown := false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() != ampstore.SourceAmpServer {
					continue metrics
				}
			}
			shown = true
			v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return v, shown
}

// A sync that never completes (one thread cannot be read, at every sync)
// used to hide every family of the server's store for good: they waited
// for the first complete sync. amp_server_up is there from the first
// scrape (0 until a sync completes); the store's families are shown once
// a sync has gone over the whole listing, with what every other thread
// counted, as a local file that cannot be read does not hold up the first
// scan of its directory.
func TestServerFamiliesShownWhenASyncNeverCompletes(t *testing.T) {
	const key = "sgamp_right_key_0123456789"
	srv := ampservertest.New(key, "dev@example.com")
	defer srv.Close()
	for i := range 3 {
		if _, err := srv.Put(threadDoc(i), 1764590400000); err != nil {
			t.Fatal(err)
		}
	}
	// One thread's read is refused as invalid (not retried): the sync
	// (the only one: the next is an hour away) does not complete.
	srv.Fail(ampserver.MethodGetThreadTail, ampservertest.Fault{Status: 400, Code: "invalid-argument"})
	keyFile := filepath.Join(t.TempDir(), "amp-key")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.AmpServer.Enabled = config.AmpServerOn
	cfg.AmpServer.URL = srv.URL
	cfg.AmpServer.APIKeyFile = keyFile
	cfg.AmpServer.SyncInterval = model.Duration(time.Hour)
	cfg.AmpServer.MaxConcurrency = 1
	env := config.Env{Getenv: func(string) string { return "" }, Home: t.TempDir()}
	reg := prometheus.NewRegistry()
	labels := ampstore.NewLabelCap(100, nil)
	local := ampstore.NewThreadStore(ampstore.StoreOptions{Labels: labels})
	streams := ampstore.NewStreamStore(labels, time.Now)
	amp := collector.NewAmpCollector(local, streams)
	src, err := newServerSource(cfg, env, slog.New(slog.DiscardHandler), reg, labels, collector.NewExporterMetrics(reg), local, streams, amp)
	if err != nil || src == nil {
		t.Fatalf("server source: %v %v", src, err)
	}
	reg.MustRegister(amp)
	src.seed(local, streams)

	// Before any sync: up is 0, the store's families wait.
	if up, shown := gathered(t, reg, collector.NameServerUp); !shown || up != 0 {
		t.Fatalf("amp_server_up before the first sync: %v (shown %v), want 0", up, shown)
	}
	if _, shown := gathered(t, reg, collector.NameOf(ampstore.FamMessages)); shown {
		t.Fatal("server messages shown before the first sync")
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.syncer.Run(ctx, src.firstScan) }()
	src.scanned()
	deadline := time.Now().Add(30 * time.Second)
	for srv.Requests()[ampserver.MethodThreadDisplayCostInfo] < 2 || !amp.Ready(ampstore.SourceAmpServer) {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("the server's families are still hidden after a sync over the whole listing that one thread kept from completing")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, shown := gathered(t, reg, collector.NameOf(ampstore.FamMessages)); !shown || n != 4 {
		t.Fatalf("server messages %v (shown %v), want the two threads read: 4", n, shown)
	}
	if up, shown := gathered(t, reg, collector.NameServerUp); !shown || up != 0 {
		t.Fatalf("amp_server_up %v (shown %v), want 0: the sync did not complete", up, shown)
	}
	if _, shown := gathered(t, reg, collector.NameOf(ampstore.FamBilled)); !shown {
		t.Fatal("amp_billed_cost_usd_total not shown")
	}
}
