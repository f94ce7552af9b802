package threads

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/config"
)

// Source is the watcher as one of the exporter's sources (source.Source).
// It reads the threads section and limits.max_file_bytes; a reload applies
// all of them.
type Source struct {
	opts    Options
	store   Store
	metrics Metrics

	mu      sync.Mutex
	cfg     Config
	applied bool
	w       *Watcher      // set by Run
	done    chan struct{} // closed when Run returns
}

// NewSource returns the source; Apply configures it, Run starts it.
func NewSource(opts Options, store Store, metrics Metrics) *Source {
	return &Source{opts: opts, store: store, metrics: metrics}
}

// Name is the configuration section the source reads.
func (s *Source) Name() string { return "threads" }

// ConfigOf is the watcher's part of a configuration.
func ConfigOf(cfg *config.Config) Config {
	return Config{
		Dirs:           cfg.Threads.Dirs,
		ResyncInterval: time.Duration(cfg.Threads.ResyncInterval),
		PollInterval:   time.Duration(cfg.Threads.PollInterval),
		MaxFileBytes:   int64(cfg.Limits.MaxFileBytes),
	}
}

// Apply hands the watcher its configuration: kept for Run before it
// starts, handed to the running loop after (it waits while the first scan
// runs). A directory added is scanned at once; one removed leaves
// amp_threads but no counter goes down.
func (s *Source) Apply(cfg *config.Config) error {
	c := ConfigOf(cfg)
	s.mu.Lock()
	if s.w == nil {
		s.cfg, s.applied = c, true
		s.mu.Unlock()
		return nil
	}
	w, done := s.w, s.done
	s.mu.Unlock()
	select {
	case w.reconfig <- c:
	case <-done:
	}
	return nil
}

var errNotApplied = errors.New("threads source: Run before Apply")

// Run watches until ctx ends.
func (s *Source) Run(ctx context.Context) error {
	s.mu.Lock()
	if !s.applied || s.w != nil {
		s.mu.Unlock()
		return errNotApplied
	}
	s.w = New(s.cfg, s.opts, s.store, s.metrics)
	s.done = make(chan struct{})
	w, done := s.w, s.done
	s.mu.Unlock()
	defer close(done)
	return w.Run(ctx)
}
