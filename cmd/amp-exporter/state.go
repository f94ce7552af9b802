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
// the contributions of threads deleted in that window (and stream lines
// ingested over HTTP in it) could be lost.
const stateSaveInterval = 10 * time.Second

// stateKeeper loads one store's state at start and saves it whenever it
// changed, and once more at shutdown.
type stateKeeper struct {
	path       string
	generation func() uint64
	export     func() any
	// load decodes the file into the store; found is false when there is
	// no file yet.
	load    func(path string) (found bool, err error)
	metrics *collector.ExporterMetrics
	log     *slog.Logger
	saved   uint64
}

// keeper returns the state keeper of a store whose persisted form is S.
func keeper[S any](path string, generation func() uint64, export func() *S, importState func(*S) error,
	m *collector.ExporterMetrics, log *slog.Logger) *stateKeeper {
	return &stateKeeper{
		path: path, generation: generation, export: func() any { return export() }, metrics: m, log: log,
		load: func(path string) (bool, error) {
			var st S
			found, err := statefile.Load(path, &st)
			if err == nil && found {
				if err = importState(&st); err != nil {
					err = errors.Join(statefile.ErrDamaged, err)
				}
			}
			return found, err
		},
	}
}

// restore loads the state. A damaged file is reported, set aside for
// inspection and replaced by an empty state; it is never silently dropped.
func (k *stateKeeper) restore() error {
	found, err := k.load(k.path)
	switch {
	case err == nil && found:
		k.saved = k.generation()
		k.log.Info("state restored", "path", k.path)
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
	gen := k.generation()
	if err := statefile.Save(k.path, k.export()); err != nil {
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
			if k.generation() == k.saved {
				continue
			}
			if err := k.save(); err != nil {
				k.log.Error("cannot save state", "path", k.path, "err", err)
			}
		}
	}
}
