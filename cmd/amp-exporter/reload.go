package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/pricing"
	amysource "github.com/amp-exporter/amp-exporter/source/amy"
	"github.com/amp-exporter/amp-exporter/source/streams"
	"github.com/amp-exporter/amp-exporter/source/threads"
	"github.com/amp-exporter/amp-exporter/store"
)

type reloadRequest struct {
	reply chan<- error
}

// reloader owns the configuration: SIGHUP and POST /-/reload both go
// through its one goroutine, so reloads never race.
type reloader struct {
	path   string
	env    config.Env
	labels *store.LabelCap

	threadStore    *store.ThreadStore
	serverStore    *store.ThreadStore // nil when the Amp server source is off
	streamStore    *store.StreamStore
	embeddedPrices *pricing.GenAIPrices
	amyStore       *store.AmyStore
	amyClient      *amysource.Client
	watcher        *threads.Watcher
	tailer         *streams.Tailer
	metrics        *collector.ExporterMetrics
	log            *slog.Logger
	requests       chan reloadRequest
	remoteWrite    *remoteWriters // set once the run group is built

	mu      sync.RWMutex
	current *config.Config
}

func proxyAddrs(cfg *config.Config) string {
	s := ""
	for _, u := range cfg.Amy {
		s += u.Name + "=" + u.Proxy.ListenAddress + ";"
	}
	return s
}

func (r *reloader) ingestConfig() streams.IngestConfig {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return streams.IngestConfig{
		MaxLineBytes: int(r.current.Streams.MaxLineBytes),
		MaxBodyBytes: int64(r.current.Streams.Ingest.MaxBodyBytes),
		// The memory one request can hold is bounded by MaxLineBytes;
		// all of them together by this.
		MaxConcurrent: r.current.Streams.Ingest.MaxConcurrentRequests,
		ReadTimeout:   time.Duration(r.current.Streams.Ingest.ReadTimeout),
	}
}

func (r *reloader) ingestEnabled() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.current.Streams.Ingest.Enabled
}

func (r *reloader) config() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.current.String()
}

// request asks for a reload and waits for it (SIGHUP).
func (r *reloader) request(ctx context.Context) {
	reply := make(chan error, 1)
	select {
	case r.requests <- reloadRequest{reply: reply}:
		<-reply
	case <-ctx.Done():
	}
}

func (r *reloader) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case req := <-r.requests:
			req.reply <- r.reload(ctx)
		}
	}
}

func (r *reloader) reload(ctx context.Context) error {
	cfg, err := config.Load(r.path, r.env)
	if err != nil {
		r.metrics.ConfigLoaded(false, time.Now())
		r.log.Error("configuration reload failed, keeping the previous configuration", "err", err)
		return err
	}
	pricer, err := buildPricer(cfg.Pricing, r.embeddedPrices)
	if err != nil {
		r.metrics.ConfigLoaded(false, time.Now())
		r.log.Error("configuration reload failed, keeping the previous configuration", "err", err)
		return err
	}
	if err := r.remoteWrite.apply(cfg); err != nil {
		r.metrics.ConfigLoaded(false, time.Now())
		r.log.Error("configuration reload failed, keeping the previous configuration", "err", err)
		return err
	}
	r.threadStore.SetPrices(pricer)
	r.streamStore.SetPrices(pricer)
	if r.serverStore != nil {
		r.serverStore.SetPrices(pricer)
	}
	r.metrics.PricingInUse(pricer.Source, pricer.Version)
	r.labels.SetMax(cfg.Limits.MaxLabelValues)
	r.amyStore.SetUpstreams(upstreamNames(cfg))
	r.amyStore.SetTurnTimeout(longestTurnTimeout(cfg))
	followConfiguredTurns(ctx, cfg, r.amyClient)
	if proxyAddrs(cfg) != proxyAddrs(r.current) {
		r.log.Warn("amy proxy listen addresses changed; they take effect at the next restart")
	}
	r.watcher.Reconfigure(ctx, watcherConfig(cfg))
	r.tailer.Reconfigure(ctx, tailConfig(cfg))
	r.mu.Lock()
	r.current = cfg
	r.mu.Unlock()
	r.metrics.ConfigLoaded(true, time.Now())
	r.log.Info("configuration reloaded", "dirs", cfg.Threads.Dirs)
	return nil
}
