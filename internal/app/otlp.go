package app

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/otlp"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// otlpPushers runs one sender per otlp entry, as remoteWriters does for
// remote_write: each pushes what /metrics serves every interval once the
// first scan is done, and once more when it stops (shutdown, or a reload
// that removes or changes its entry; an unchanged entry keeps running).
// Every sender shares the series' start times, which the state keeps.
type otlpPushers struct {
	ctx      context.Context // the senders'; stop ends it
	cancel   context.CancelFunc
	reg      *prometheus.Registry
	ready    func() bool
	log      *slog.Logger
	metrics  *otlp.Metrics
	starts   *ampstore.SeriesStarts
	hostname func() (string, error)

	mu      sync.Mutex
	running []runningOTLP
	wg      sync.WaitGroup
}

type runningOTLP struct {
	cfg    config.OTLPConfig
	cancel context.CancelFunc
}

// newOTLPPushers returns the senders' owner, with none running yet.
func newOTLPPushers(reg *prometheus.Registry, ready func() bool, starts *ampstore.SeriesStarts, logger *slog.Logger) *otlpPushers {
	ctx, cancel := context.WithCancel(context.Background())
	return &otlpPushers{ctx: ctx, cancel: cancel, reg: reg, ready: ready, log: logger, starts: starts, hostname: os.Hostname,
		metrics: otlp.NewMetrics(reg, collector.NewCounterVec(collector.NameOTLPDatapoints), collector.NewGaugeVec(collector.NameOTLPLastOK))}
}

// stop ends every sender and waits for their last pushes.
func (op *otlpPushers) stop() {
	op.cancel()
	op.wg.Wait()
}

// otlpPlan is a change of the running senders, built but not yet applied.
type otlpPlan struct {
	matched []bool // by running sender: kept
	start   []config.OTLPConfig
	senders []*otlp.Sender // for start
}

// prepare builds the senders cfg.OTLP adds, changing nothing: an entry
// whose configuration is unchanged keeps its sender, and a bad entry
// refuses the whole configuration.
func (op *otlpPushers) prepare(cfg *config.Config) (*otlpPlan, error) {
	op.mu.Lock()
	defer op.mu.Unlock()
	p := &otlpPlan{matched: make([]bool, len(op.running))}
next:
	for _, c := range cfg.OTLP {
		for i, r := range op.running {
			if !p.matched[i] && reflect.DeepEqual(r.cfg, c) {
				p.matched[i] = true
				continue next
			}
		}
		p.start = append(p.start, c)
	}
	for _, c := range p.start {
		s, err := op.sender(c)
		if err != nil {
			return nil, err
		}
		p.senders = append(p.senders, s)
	}
	return p, nil
}

// commit stops the senders the plan does not keep (each makes a last
// push) and starts the new ones.
func (op *otlpPushers) commit(p *otlpPlan) {
	op.mu.Lock()
	defer op.mu.Unlock()
	var keep []runningOTLP
	stopped := 0
	for i, r := range op.running {
		if p.matched[i] {
			keep = append(keep, r)
			continue
		}
		r.cancel() // its Run makes one last push
		stopped++
	}
	op.running = keep
	for i, s := range p.senders {
		sctx, cancel := context.WithCancel(op.ctx)
		op.running = append(op.running, runningOTLP{cfg: p.start[i], cancel: cancel})
		op.wg.Add(1)
		go func() {
			defer op.wg.Done()
			_ = s.Run(sctx)
		}()
		op.log.Info("pushing metrics with OTLP", "endpoint", p.start[i].Endpoint.Redacted(), "url_hash", s.Hash(),
			"interval", p.start[i].Interval, "resource_attributes", p.start[i].ResourceAttributes)
	}
	if stopped > 0 {
		op.log.Info("otlp: stopped senders whose entry was removed or changed", "count", stopped)
	}
}

// otlpResource is an entry's resource attributes with the defaults:
// service.name amp-exporter, service.instance.id the host name.
func otlpResource(attrs map[string]string, hostname func() (string, error)) map[string]string {
	res := maps.Clone(attrs)
	if res == nil {
		res = map[string]string{}
	}
	if res["service.name"] == "" {
		res["service.name"] = "amp-exporter"
	}
	if res["service.instance.id"] == "" {
		if h, err := hostname(); err == nil && h != "" {
			res["service.instance.id"] = h
		}
	}
	return res
}

func (op *otlpPushers) sender(c config.OTLPConfig) (*otlp.Sender, error) {
	client, err := commoncfg.NewClientFromConfig(c.HTTPClientConfig, "otlp", commoncfg.WithUserAgent(UserAgent()))
	if err != nil {
		return nil, fmt.Errorf("otlp %s: %w", c.Endpoint.Redacted(), err)
	}
	return otlp.New(otlp.Options{
		Endpoint:  string(c.Endpoint),
		Interval:  time.Duration(c.Interval),
		Timeout:   time.Duration(c.Timeout),
		Resource:  otlpResource(c.ResourceAttributes, op.hostname),
		GenAI:     c.GenAINames,
		Headers:   c.Headers(),
		Client:    client,
		Gatherer:  collector.WithoutEmptyRepository(op.reg),
		Starts:    op.starts,
		Ready:     op.ready,
		UserAgent: UserAgent(),
		Clock:     clock.Real{},
		Logger:    op.log,
		Metrics:   op.metrics,
	}), nil
}

// keepRestoredStarts keeps the saved OTLP start times only of the series
// whose totals the state brought back: called once the state is restored
// and before any source counts. Only the collectors over the restored
// stores are read: the exporter's own counters and the Go and process
// ones count this process only, whatever their value now, and under
// their old start time a receiver would read the restart as a drop.
// Without storage there is no saved start to check.
func (a *App) keepRestoredStarts() {
	if a.keeper == nil {
		return
	}
	restored := prometheus.NewRegistry()
	// The Amp families wait for their source's first pass (SetReady);
	// the stores already hold what was restored, so they are read
	// ungated.
	restored.MustRegister(a.amp.Ungated(), collector.NewAmyCollector(a.amyStore))
	if a.workspace != nil && a.workspace.restored.Load() {
		restored.MustRegister(collector.NewWorkspaceCollector(a.workspace.store, nil))
	}
	mfs, err := restored.Gather()
	if err != nil {
		// What was gathered is still checked; a series missing from it
		// only gets a new start time, which doubles nothing.
		a.log.Warn("otlp: gathering the restored metrics", "err", err)
	}
	if n := otlp.KeepRestored(mfs, a.starts); n > 0 {
		a.log.Debug("otlp: series that were not restored get a new start time", "series", n)
	}
}
