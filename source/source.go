// Package source is the lifecycle every source of the exporter shares
// (thread files, the Amp server, stream-json captures, Amy turn streams):
// it is configured with Apply, once before it runs and again on every
// reload, and it runs until its context ends. A part of the configuration
// a running source cannot change is not ignored: Apply says so with an
// error that wraps ErrRestart and names the keys, and the exporter logs it.
package source

import (
	"context"
	"errors"
	"reflect"
	"strings"

	"github.com/amp-exporter/amp-exporter/config"
)

// Source is one of the exporter's inputs.
type Source interface {
	// Name is the configuration section the source reads: "threads",
	// "streams", "amp_server", "amy".
	Name() string
	// Apply hands the source a configuration: once before Run, then on
	// every reload (never concurrently). What can change while it runs
	// is applied; what cannot is reported with an error wrapping
	// ErrRestart, and the rest is still applied. The configuration has
	// been validated, so Apply has no other reason to fail; should it,
	// the reload is reported as failed (the other sources still apply).
	Apply(cfg *config.Config) error
	// Run reads until ctx ends, then returns once the source's own
	// goroutines have stopped, so that what it counted is in the stores
	// before the final save.
	Run(ctx context.Context) error
}

// ErrRestart is wrapped by the errors that say a change takes effect only
// at the next restart.
var ErrRestart = errors.New("takes effect at the next restart")

// RestartError names the keys whose change needs a restart.
type RestartError struct {
	Keys []string
}

func (e *RestartError) Error() string {
	return "a change of " + strings.Join(e.Keys, ", ") + " " + ErrRestart.Error()
}

// Is makes errors.Is(err, ErrRestart) true.
func (e *RestartError) Is(target error) bool { return target == ErrRestart }

// NeedsRestart returns a *RestartError for the keys, or nil when there
// are none.
func NeedsRestart(keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	return &RestartError{Keys: keys}
}

// Fixed remembers the parts of a configuration a source reads only when it
// starts, and names those that a later configuration changes.
type Fixed struct {
	parts []fixedPart
	first []any
}

type fixedPart struct {
	key string
	get func(*config.Config) any
}

// Key adds a part: its name in the configuration file and how to read it.
func (f *Fixed) Key(key string, get func(*config.Config) any) *Fixed {
	f.parts = append(f.parts, fixedPart{key, get})
	return f
}

// Check records cfg's values at the first call; later calls return a
// *RestartError naming the parts whose value differs from the first (nil
// when none does).
func (f *Fixed) Check(cfg *config.Config) error {
	if f.first == nil {
		f.first = make([]any, len(f.parts))
		for i, p := range f.parts {
			f.first[i] = p.get(cfg)
		}
		return nil
	}
	var changed []string
	for i, p := range f.parts {
		if !reflect.DeepEqual(f.first[i], p.get(cfg)) {
			changed = append(changed, p.key)
		}
	}
	return NeedsRestart(changed...)
}

// Off is the place of a source that is turned off or not built at start:
// it runs nothing, and any later change of its parts needs a restart.
type Off struct {
	name  string
	fixed Fixed
}

// NewOff returns the stand-in of the named source, watching the given
// parts (see Fixed.Key).
func NewOff(name string, fixed func(*Fixed)) *Off {
	o := &Off{name: name}
	fixed(&o.fixed)
	return o
}

// Name is the source's configuration section.
func (o *Off) Name() string { return o.name }

// Apply reports a change of the watched parts as needing a restart.
func (o *Off) Apply(cfg *config.Config) error { return o.fixed.Check(cfg) }

// Run waits for ctx to end.
func (o *Off) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}
