package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	rungroup "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/version"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/remotewrite"
)

// addRemoteWrite starts one sender per remote_write entry in g: each
// pushes what /metrics serves (reg) every interval once the first scan is
// done, and once more at shutdown. The receivers are fixed for the life of
// the process; a reload that changes them is reported (warnRemoteWriteChange).
func addRemoteWrite(g *rungroup.Group, ctx context.Context, cancel context.CancelFunc, cfg *config.Config,
	reg *prometheus.Registry, ready func() bool, logger *slog.Logger) error {
	if len(cfg.RemoteWrite) == 0 {
		return nil
	}
	metrics := remotewrite.NewMetrics(reg)
	for i, rw := range cfg.RemoteWrite {
		client, err := commoncfg.NewClientFromConfig(rw.HTTPClientConfig, "remote_write",
			commoncfg.WithUserAgent(userAgent()))
		if err != nil {
			return fmt.Errorf("remote_write[%d]: %w", i, err)
		}
		s := remotewrite.New(remotewrite.Options{
			URL:            string(rw.URL),
			Interval:       time.Duration(rw.Interval),
			Timeout:        time.Duration(rw.Timeout),
			ExternalLabels: rw.ExternalLabels,
			Client:         client,
			Gatherer:       reg,
			Ready:          ready,
			UserAgent:      userAgent(),
			Clock:          clock.Real{},
			Logger:         logger,
			Metrics:        metrics,
			Message:        rw.ProtobufMessage,
		})
		logger.Info("pushing metrics with remote write", "url", rw.URL.Redacted(), "url_hash", s.Hash(),
			"interval", rw.Interval, "external_labels", rw.ExternalLabels, "protobuf_message", rw.ProtobufMessage)
		g.Add(func() error { return s.Run(ctx) }, func(error) { cancel() })
	}
	return nil
}

func userAgent() string { return "amp-exporter/" + version.Version }

// warnRemoteWriteChange reports a reload that changes remote_write: the
// senders keep the configuration they started with until a restart.
func warnRemoteWriteChange(old, cur *config.Config, logger *slog.Logger) {
	render := func(c *config.Config) string { return (&config.Config{RemoteWrite: c.RemoteWrite}).String() }
	if render(old) != render(cur) {
		logger.Warn("remote_write changed; it takes effect at the next restart")
	}
}
