package ampserver

import (
	"context"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/source"
)

// Source is the sync as one of the exporter's sources (source.Source).
// What it reads from the configuration (the amp_server section, and
// limits.max_file_bytes, which bounds a response and a thread) is fixed
// when it is built: the key is found, the client and the server's own
// thread store are set up before the saved state is restored. A reload
// that changes any of it is reported as needing a restart.
type Source struct {
	syncer *Syncer
	start  <-chan struct{}
	fixed  source.Fixed
}

// NewSource wraps a syncer; Run waits for start before the first sync
// (see Syncer.Run).
func NewSource(s *Syncer, start <-chan struct{}) *Source {
	src := &Source{syncer: s, start: start}
	src.fixed.Key("amp_server", func(c *config.Config) any { return c.AmpServer }).
		Key("limits.max_file_bytes", func(c *config.Config) any { return c.Limits.MaxFileBytes })
	return src
}

// SourceName is the configuration section of the Amp server source.
const SourceName = "amp_server"

// Name is the configuration section the source reads.
func (s *Source) Name() string { return SourceName }

// Apply records the configuration the source was built with (the first
// call) and reports any later change of it as needing a restart.
func (s *Source) Apply(cfg *config.Config) error { return s.fixed.Check(cfg) }

// Run syncs until ctx ends.
func (s *Source) Run(ctx context.Context) error { return s.syncer.Run(ctx, s.start) }

// Off is the source's place while it is off (amp_server.enabled: false,
// or auto without a key): turning it on, or any other change of the
// section, needs a restart.
func Off() source.Source {
	return source.NewOff(SourceName, func(f *source.Fixed) {
		f.Key("amp_server", func(c *config.Config) any { return c.AmpServer })
	})
}
