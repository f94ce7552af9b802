package app

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/source"
	"github.com/amp-exporter/amp-exporter/source/workspace"
	"github.com/amp-exporter/amp-exporter/source/workspace/api"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// workspaceSource is the workspace source, wired: its store, its
// instruments, the syncer and where its state is kept.
type workspaceSource struct {
	store   *ampstore.WorkspaceStore
	metrics *collector.WorkspaceMetrics
	syncer  *workspace.Syncer
	dir     string // the storage path, "" for none
	log     *slog.Logger
	// restored: the state held counts, complete totals that may be shown
	// before the first sync.
	restored atomic.Bool
	// listed: a sync went over the whole listing (a first sync of a large
	// workspace takes hours: its counters are shown from then on, as they
	// grow).
	listed atomic.Bool
}

// newWorkspaceSource sets up the workspace source, or returns nil when it
// is off. The state is read from dir (the storage path) when there is
// one; it must run before the registry is served.
func newWorkspaceSource(cfg *config.Config, logger *slog.Logger, reg prometheus.Registerer,
	labels *ampstore.LabelCap, repos *ampstore.Repositories, dir string) (*workspaceSource, error) {
	w := cfg.Workspace
	if !w.Enabled {
		return nil, nil
	}
	wm := collector.NewWorkspaceMetrics(reg, append([]string{api.EndpointToken}, api.Endpoints...), api.Reasons)
	opts := api.OptionsFrom(w)
	opts.Version = version.Version
	opts.Clock = clock.Real{}
	opts.Hooks = api.Hooks{
		Request: wm.Request,
		Bytes:   wm.Bytes,
		Anomaly: func(endpoint, reason string, n int) {
			for range n {
				wm.Unexpected(endpoint, reason)
			}
		},
	}
	client, err := api.New(opts)
	if err != nil {
		return nil, err
	}
	st := ampstore.NewWorkspaceStore(labels, repos)
	st.SetUserLabel(w.UserLabel)
	src := &workspaceSource{store: st, metrics: wm, dir: dir, log: logger}
	if dir != "" {
		saved, ok, err := workspace.LoadState(dir)
		switch {
		case err != nil:
			// Starting afresh: the counters start again from zero, which
			// Prometheus takes for a reset; nothing is counted twice.
			logger.Error("cannot read the workspace source's state; starting afresh", "err", err)
		case ok:
			st.Import(saved)
			src.restored.Store(true)
		}
	}
	src.syncer = workspace.NewSyncer(client, st, workspace.Config{
		Interval:    time.Duration(w.SyncInterval),
		HistoryDays: w.HistoryDays,
		PageSize:    w.PageSize,
	}, workspace.Hooks{Skipped: wm.ThreadSkipped, Listed: func() { src.listed.Store(true) }, Checkpoint: src.save},
		clock.Real{}, logger)
	reg.MustRegister(collector.NewWorkspaceCollector(st, func() bool {
		return src.restored.Load() || src.listed.Load() || wm.SyncedOnce()
	}))
	return src, nil
}

// synced is called after each sync: the health families, and the state
// saved when anything was counted.
func (s *workspaceSource) synced(_ workspace.Stats, err error, at time.Time) {
	s.metrics.Up(err == nil)
	if err == nil {
		s.metrics.Synced(at)
	}
	s.save()
}

// save writes the state when the store changed since the last save.
func (s *workspaceSource) save() {
	if s == nil || s.dir == "" || !s.store.Changed() {
		return
	}
	if _, err := workspace.SaveState(s.dir, s.store.Export()); err != nil {
		s.log.Error("cannot save the workspace source's state", "err", err)
	}
}

// runner is the source's lifecycle: it syncs until stopped, then saves
// what the last sync counted (the ordered stop's sources step comes
// before the final save of the other sources' state).
func (s *workspaceSource) runner() source.Source {
	return &workspaceRunner{Source: workspace.NewSource(s.syncer, s.synced), ws: s}
}

type workspaceRunner struct {
	*workspace.Source
	ws *workspaceSource
}

func (r *workspaceRunner) Run(ctx context.Context) error {
	err := r.Source.Run(ctx)
	r.ws.save()
	return err
}
