package workspace

import (
	"context"
	"time"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/source"
)

// SourceName is the configuration section of the workspace source.
const SourceName = "amp_workspace"

// Source is the workspace source's lifecycle: it syncs until stopped,
// and its section of the configuration needs a restart to change.
type Source struct {
	syncer *Syncer
	done   func(Stats, error, time.Time)
	fixed  source.Fixed
}

// NewSource runs syncer; done is called after each sync (it saves the
// state and sets the health families).
func NewSource(syncer *Syncer, done func(Stats, error, time.Time)) *Source {
	s := &Source{syncer: syncer, done: done}
	s.fixed.Key(SourceName, func(c *config.Config) any { return c.Workspace })
	return s
}

// Name is the configuration section the source reads.
func (s *Source) Name() string { return SourceName }

// Apply records the configuration the source was built with (the first
// call) and reports any later change of it as needing a restart.
func (s *Source) Apply(cfg *config.Config) error { return s.fixed.Check(cfg) }

// Run syncs until ctx ends.
func (s *Source) Run(ctx context.Context) error { return s.syncer.Run(ctx, s.done) }

// Off is the source's place while it is off: turning it on, or any other
// change of the section, needs a restart.
func Off() source.Source {
	return source.NewOff(SourceName, func(f *source.Fixed) {
		f.Key(SourceName, func(c *config.Config) any { return c.Workspace })
	})
}
