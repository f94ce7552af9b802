package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/internal/statefile"
)

// stateSaveInterval bounds what a crash can lose: counts made since the
// last save are re-read from the files that still exist on restart, so only
// the contributions of threads deleted in that window could be lost.
const stateSaveInterval = 10 * time.Second

// stateKeeper loads the counting state at start and saves it whenever it
// changed, and once more at shutdown.
type stateKeeper struct {
	path    string
	store   *collector.ThreadStore
	metrics *collector.ExporterMetrics
	log     *slog.Logger
	saved   uint64
}

// load restores the state. A damaged file is reported, set aside for
// inspection and replaced by an empty state; it is never silently dropped.
func (k *stateKeeper) load() error {
	var st collector.State
	found, err := statefile.Load(k.path, &st)
	if err == nil && found {
		err = k.store.Import(&st)
		if err != nil {
			err = errors.Join(statefile.ErrDamaged, err)
		}
	}
	switch {
	case err == nil && found:
		k.saved = k.store.Generation()
		k.log.Info("state restored", "path", k.path, "threads", len(st.Threads), "files", len(st.Files))
		return nil
	case err == nil:
		k.log.Info("no saved state yet, starting fresh", "path", k.path)
		return k.save() // fail early if the directory is not writable
	case errors.Is(err, statefile.ErrDamaged):
		k.metrics.StateFailed("load")
		aside, aerr := statefile.SetAside(k.path, time.Now())
		if aerr != nil {
			return errors.Join(err, aerr)
		}
		k.log.Error("saved state is damaged; it was set aside and counting starts fresh (counters will look reset to Prometheus)",
			"path", k.path, "set_aside_as", aside, "err", err)
		return k.save()
	default:
		return err
	}
}

func (k *stateKeeper) save() error {
	gen := k.store.Generation()
	if err := statefile.Save(k.path, k.store.Export()); err != nil {
		k.metrics.StateFailed("save")
		return err
	}
	k.saved = gen
	return nil
}

func (k *stateKeeper) run(ctx context.Context) error {
	t := time.NewTicker(stateSaveInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := k.save(); err != nil {
				k.log.Error("cannot save state at shutdown", "path", k.path, "err", err)
			}
			return nil
		case <-t.C:
			if k.store.Generation() == k.saved {
				continue
			}
			if err := k.save(); err != nil {
				k.log.Error("cannot save state", "path", k.path, "err", err)
			}
		}
	}
}
