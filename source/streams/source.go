package streams

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
)

// Source is the capture tailer as one of the exporter's sources
// (source.Source). It reads the streams section; a reload applies all of
// it (the ingest endpoint reads streams.ingest at every request, see
// IngestConfigOf).
type Source struct {
	store   Store
	metrics Metrics
	log     *slog.Logger
	clock   clock.Clock

	mu      sync.Mutex
	cfg     TailConfig
	applied bool
	t       *Tailer       // set by Run
	done    chan struct{} // closed when Run returns

	// OnFirstPass, when set before Run, is called once the first poll has
	// read every capture there is (Tailer.OnFirstPass).
	OnFirstPass func()
}

// NewSource returns the source; Apply configures it, Run starts it.
func NewSource(store Store, metrics Metrics, log *slog.Logger, clk clock.Clock) *Source {
	return &Source{store: store, metrics: metrics, log: log, clock: clk}
}

// Name is the configuration section the source reads.
func (s *Source) Name() string { return "streams" }

// TailConfigOf is the tailer's part of a configuration.
func TailConfigOf(cfg *config.Config) TailConfig {
	return TailConfig{
		Dirs:         cfg.Streams.Dirs,
		PollInterval: time.Duration(cfg.Streams.PollInterval),
		MaxLineBytes: int(cfg.Streams.MaxLineBytes),
	}
}

// IngestConfigOf is the ingest endpoint's part of a configuration.
func IngestConfigOf(cfg *config.Config) IngestConfig {
	return IngestConfig{
		MaxLineBytes: int(cfg.Streams.MaxLineBytes),
		MaxBodyBytes: int64(cfg.Streams.Ingest.MaxBodyBytes),
		// The memory one request can hold is bounded by MaxLineBytes;
		// all of them together by this.
		MaxConcurrent: cfg.Streams.Ingest.MaxConcurrentRequests,
		ReadTimeout:   time.Duration(cfg.Streams.Ingest.ReadTimeout),
	}
}

// Apply hands the tailer its configuration: kept for Run before it
// starts, handed to the running loop after (which polls at once).
func (s *Source) Apply(cfg *config.Config) error {
	c := TailConfigOf(cfg)
	s.mu.Lock()
	if s.t == nil {
		s.cfg, s.applied = c, true
		s.mu.Unlock()
		return nil
	}
	t, done := s.t, s.done
	s.mu.Unlock()
	select {
	case t.reconfig <- c:
	case <-done:
	}
	return nil
}

var errNotApplied = errors.New("streams source: Run before Apply")

// Run tails until ctx ends.
func (s *Source) Run(ctx context.Context) error {
	s.mu.Lock()
	if !s.applied || s.t != nil {
		s.mu.Unlock()
		return errNotApplied
	}
	s.t = NewTailer(s.cfg, s.store, s.metrics, s.log, s.clock)
	s.t.OnFirstPass = s.OnFirstPass
	s.done = make(chan struct{})
	t, done := s.t, s.done
	s.mu.Unlock()
	defer close(done)
	return t.Run(ctx)
}
