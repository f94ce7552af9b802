package app

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/version"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/remotewrite"
)

// remoteWriters runs one sender per remote_write entry: each pushes what
// /metrics serves every interval once the first scan is done, and once
// more when it stops (shutdown, or a reload that removes or changes its
// entry; an unchanged entry keeps running).
type remoteWriters struct {
	ctx     context.Context // the senders'; stop ends it
	cancel  context.CancelFunc
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

// newRemoteWriters returns the senders' owner, with none running yet.
func newRemoteWriters(reg *prometheus.Registry, ready func() bool, logger *slog.Logger) *remoteWriters {
	ctx, cancel := context.WithCancel(context.Background())
	return &remoteWriters{ctx: ctx, cancel: cancel, reg: reg, ready: ready, log: logger, metrics: newRemoteWriteMetrics(reg)}
}

// newRemoteWriteMetrics registers the senders' metrics, built from their
// rows of the collector's table.
func newRemoteWriteMetrics(reg prometheus.Registerer) *remotewrite.Metrics {
	return remotewrite.NewMetrics(reg,
		collector.NewCounterVec(collector.NameRemoteWriteSamples),
		collector.NewGaugeVec(collector.NameRemoteWriteLastOK))
}

// stop ends every sender and waits for their last pushes.
func (rw *remoteWriters) stop() {
	rw.cancel()
	rw.wg.Wait()
}

// rwPlan is a change of the running senders, built but not yet applied.
type rwPlan struct {
	matched []bool // by running sender: kept
	start   []config.RemoteWriteConfig
	senders []*remotewrite.Sender // for start
}

// prepare builds the senders cfg.RemoteWrite adds, changing nothing: an
// entry whose configuration is unchanged keeps its sender, and a bad entry
// refuses the whole configuration.
func (rw *remoteWriters) prepare(cfg *config.Config) (*rwPlan, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	p := &rwPlan{matched: make([]bool, len(rw.running))}
next:
	for _, c := range cfg.RemoteWrite {
		for i, r := range rw.running {
			if !p.matched[i] && reflect.DeepEqual(r.cfg, c) {
				p.matched[i] = true
				continue next
			}
		}
		p.start = append(p.start, c)
	}
	for _, c := range p.start {
		s, err := rw.sender(c)
		if err != nil {
			return nil, err
		}
		p.senders = append(p.senders, s)
	}
	return p, nil
}

// commit stops the senders the plan does not keep (each makes a last
// push) and starts the new ones.
func (rw *remoteWriters) commit(p *rwPlan) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	var keep []runningSender
	stopped := 0
	for i, r := range rw.running {
		if p.matched[i] {
			keep = append(keep, r)
			continue
		}
		r.cancel() // its Run makes one last push
		stopped++
	}
	rw.running = keep
	for i, s := range p.senders {
		sctx, cancel := context.WithCancel(rw.ctx)
		rw.running = append(rw.running, runningSender{cfg: p.start[i], cancel: cancel})
		rw.wg.Add(1)
		go func() {
			defer rw.wg.Done()
			_ = s.Run(sctx)
		}()
		rw.log.Info("pushing metrics with remote write", "url", p.start[i].URL.Redacted(), "url_hash", s.Hash(),
			"interval", p.start[i].Interval, "external_labels", p.start[i].ExternalLabels, "protobuf_message", p.start[i].ProtobufMessage)
	}
	if stopped > 0 {
		rw.log.Info("remote write: stopped senders whose entry was removed or changed", "count", stopped)
	}
}

// apply makes the running senders match cfg.RemoteWrite (prepare, then
// commit); a bad entry changes nothing.
func (rw *remoteWriters) apply(cfg *config.Config) error {
	p, err := rw.prepare(cfg)
	if err != nil {
		return err
	}
	rw.commit(p)
	return nil
}

func (rw *remoteWriters) sender(c config.RemoteWriteConfig) (*remotewrite.Sender, error) {
	client, err := commoncfg.NewClientFromConfig(c.HTTPClientConfig, "remote_write", commoncfg.WithUserAgent(UserAgent()))
	if err != nil {
		return nil, fmt.Errorf("remote_write %s: %w", c.URL.Redacted(), err)
	}
	return remotewrite.New(remotewrite.Options{
		URL:            string(c.URL),
		Interval:       time.Duration(c.Interval),
		Timeout:        time.Duration(c.Timeout),
		ExternalLabels: c.ExternalLabels,
		Client:         client,
		Gatherer:       collector.WithoutEmptyRepository(rw.reg),
		Ready:          rw.ready,
		UserAgent:      UserAgent(),
		Clock:          clock.Real{},
		Logger:         rw.log,
		Metrics:        rw.metrics,
		Message:        c.ProtobufMessage,
	}), nil
}

func UserAgent() string { return "amp-exporter/" + version.Version }
