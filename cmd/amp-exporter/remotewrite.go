package main

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	rungroup "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/version"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/remotewrite"
)

// remoteWriters runs one sender per remote_write entry: each pushes what
// /metrics serves every interval once the first scan is done, and once
// more when it stops (shutdown, or a reload that removes or changes its
// entry; an unchanged entry keeps running).
type remoteWriters struct {
	ctx     context.Context
	reg     *prometheus.Registry
	ready   func() bool
	log     *slog.Logger
	metrics *remotewrite.Metrics

	mu      sync.Mutex
	running []runningSender
	wg      sync.WaitGroup
}

type runningSender struct {
	cfg    config.RemoteWriteConfig
	cancel context.CancelFunc
}

// addRemoteWrite starts the configured senders and adds to g the actor
// that waits for their last pushes at shutdown.
func addRemoteWrite(g *rungroup.Group, ctx context.Context, cancel context.CancelFunc, cfg *config.Config,
	reg *prometheus.Registry, ready func() bool, logger *slog.Logger) (*remoteWriters, error) {
	rw := &remoteWriters{ctx: ctx, reg: reg, ready: ready, log: logger, metrics: remotewrite.NewMetrics(reg)}
	if err := rw.apply(cfg); err != nil {
		return nil, err
	}
	g.Add(func() error {
		<-ctx.Done()
		rw.wg.Wait() // each sender's final push
		return nil
	}, func(error) { cancel() })
	return rw, nil
}

// apply makes the running senders match cfg.RemoteWrite. An entry whose
// configuration is unchanged keeps its sender; a bad entry changes nothing.
func (rw *remoteWriters) apply(cfg *config.Config) error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	matched := make([]bool, len(rw.running))
	var keep []runningSender
	var start []config.RemoteWriteConfig
next:
	for _, c := range cfg.RemoteWrite {
		for i, r := range rw.running {
			if !matched[i] && reflect.DeepEqual(r.cfg, c) {
				matched[i] = true
				keep = append(keep, r)
				continue next
			}
		}
		start = append(start, c)
	}
	// Build every new sender before stopping any.
	senders := make([]*remotewrite.Sender, len(start))
	for i, c := range start {
		s, err := rw.sender(c)
		if err != nil {
			return err
		}
		senders[i] = s
	}
	stopped := 0
	for i, r := range rw.running {
		if !matched[i] {
			r.cancel() // its Run makes one last push
			stopped++
		}
	}
	rw.running = keep
	for i, s := range senders {
		sctx, cancel := context.WithCancel(rw.ctx)
		rw.running = append(rw.running, runningSender{cfg: start[i], cancel: cancel})
		rw.wg.Add(1)
		go func() {
			defer rw.wg.Done()
			_ = s.Run(sctx)
		}()
		rw.log.Info("pushing metrics with remote write", "url", start[i].URL.Redacted(), "url_hash", s.Hash(),
			"interval", start[i].Interval, "external_labels", start[i].ExternalLabels, "protobuf_message", start[i].ProtobufMessage)
	}
	if stopped > 0 {
		rw.log.Info("remote write: stopped senders whose entry was removed or changed", "count", stopped)
	}
	return nil
}

func (rw *remoteWriters) sender(c config.RemoteWriteConfig) (*remotewrite.Sender, error) {
	client, err := commoncfg.NewClientFromConfig(c.HTTPClientConfig, "remote_write", commoncfg.WithUserAgent(userAgent()))
	if err != nil {
		return nil, fmt.Errorf("remote_write %s: %w", c.URL.Redacted(), err)
	}
	return remotewrite.New(remotewrite.Options{
		URL:            string(c.URL),
		Interval:       time.Duration(c.Interval),
		Timeout:        time.Duration(c.Timeout),
		ExternalLabels: c.ExternalLabels,
		Client:         client,
		Gatherer:       rw.reg,
		Ready:          rw.ready,
		UserAgent:      userAgent(),
		Clock:          clock.Real{},
		Logger:         rw.log,
		Metrics:        rw.metrics,
		Message:        c.ProtobufMessage,
	}), nil
}

func userAgent() string { return "amp-exporter/" + version.Version }
