package amy

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/source"
	"github.com/amp-exporter/amp-exporter/store"
)

// Source is the Amy side of the exporter as one of its sources
// (source.Source): the followers of the turns configured under amy, and
// the taps the proxies serve. A reload applies the upstreams (names, URLs,
// keys, timeouts, turns to follow); the proxies' listeners (listen_address,
// web_config_file) are opened at start, so a change of them needs a
// restart. A turn removed from the configuration is followed until it
// ends.
type Source struct {
	store  *store.AmyStore
	client *Client
	log    *slog.Logger
	clock  clock.Clock
	// ctx is the followers' context (and the taps': a turn created
	// through a proxy is followed with it); it ends when Run ends.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	cfg       []config.AmyUpstream // the last applied
	running   bool
	listeners map[string]config.AmyProxy // by upstream name, as at the first Apply
	taps      map[string]*tap            // by upstream name, those with a proxy
}

// SourceOptions are the source's fixed dependencies; all may be zero.
type SourceOptions struct {
	Logger *slog.Logger
	Clock  clock.Clock
	// HTTP is the followers' client (NewClient's default when nil).
	HTTP *http.Client
}

// NewSource returns the source; Apply configures it, Run starts it.
func NewSource(st *store.AmyStore, o SourceOptions) *Source {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Source{store: st, client: NewClient(st, o.Logger, o.HTTP, o.Clock), log: o.Logger, clock: o.Clock,
		ctx: ctx, cancel: cancel, taps: map[string]*tap{}}
}

// Name is the configuration section the source reads.
func (s *Source) Name() string { return "amy" }

// UpstreamOf is a configured upstream as the followers and taps use it.
func UpstreamOf(u config.AmyUpstream) Upstream {
	base, _ := url.Parse(u.BaseURL) // validated by config
	return Upstream{
		Name: u.Name, BaseURL: base, APIKey: string(u.APIKey), APIKeyFile: u.APIKeyFile,
		IdleTimeout: time.Duration(u.IdleTimeout), TurnTimeout: time.Duration(u.TurnTimeout),
	}
}

func sameUpstream(a, b Upstream) bool {
	return a.Name == b.Name && a.BaseURL.String() == b.BaseURL.String() && a.APIKey == b.APIKey &&
		a.APIKeyFile == b.APIKeyFile && a.IdleTimeout == b.IdleTimeout && a.TurnTimeout == b.TurnTimeout
}

// Apply sets the upstreams (each starts at zero on /metrics), how long an
// unfinished turn is kept, what each tap forwards to, and follows the
// configured turns (from Run on). A changed proxy listener is reported as
// needing a restart.
func (s *Source) Apply(cfg *config.Config) error {
	names := make([]string, 0, len(cfg.Amy))
	var longest time.Duration
	for _, u := range cfg.Amy {
		names = append(names, u.Name)
		longest = max(longest, time.Duration(u.TurnTimeout))
	}
	s.store.SetUpstreams(names)
	// A follower may wait this long for a turn to end: the store keeps an
	// unfinished turn's state at least that long.
	s.store.SetTurnTimeout(longest)

	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.listeners == nil
	if first {
		s.listeners = map[string]config.AmyProxy{}
	}
	var changed []string
	seen := map[string]bool{}
	for _, u := range cfg.Amy {
		seen[u.Name] = true
		if first {
			if u.Proxy.ListenAddress != "" {
				s.listeners[u.Name] = u.Proxy
			}
		} else if u.Proxy != s.listeners[u.Name] {
			changed = append(changed, fmt.Sprintf("amy[%q].proxy", u.Name))
		}
		if t := s.taps[u.Name]; t != nil {
			t.set(UpstreamOf(u), s)
		} else if first && u.Proxy.ListenAddress != "" {
			s.taps[u.Name] = newTap(UpstreamOf(u), s)
		}
	}
	for name := range s.listeners {
		if !seen[name] {
			changed = append(changed, fmt.Sprintf("amy[%q].proxy", name))
		}
	}
	s.cfg = cfg.Amy
	if s.running {
		s.followLocked()
	}
	return source.NeedsRestart(changed...)
}

// followLocked starts a follower for every configured turn; turns already
// followed or over are skipped.
func (s *Source) followLocked() {
	for _, u := range s.cfg {
		up := UpstreamOf(u)
		for _, t := range u.Turns {
			s.client.Follow(s.ctx, up, t, "")
		}
	}
}

// Run follows the configured turns and prunes finished ones past the
// replay window hourly; when ctx ends it stops every follower (those of
// turns created through a proxy too) and waits for them.
func (s *Source) Run(ctx context.Context) error {
	s.mu.Lock()
	s.running = true
	s.followLocked()
	s.mu.Unlock()
	t := s.clock.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// An Apply from now on (a reload still under way at
			// shutdown) starts no follower: none would be waited for.
			s.mu.Lock()
			s.running = false
			s.mu.Unlock()
			s.cancel()
			s.client.Wait()
			return nil
		case <-t.C():
			s.store.Prune()
		}
	}
}

// Proxy is the tap a proxy listener serves for the named upstream (nil
// when it has no proxy.listen_address at the first Apply): a transparent
// reverse proxy that counts the event streams passing through it, and
// forwards to the upstream as the last reload configured it.
func (s *Source) Proxy(name string) http.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.taps[name]; t != nil {
		return t
	}
	return nil
}

// tap serves one proxy; a reload that changes its upstream swaps the
// reverse proxy behind it (requests under way finish on the old one).
type tap struct {
	mu sync.RWMutex
	up Upstream
	h  http.Handler
}

func newTap(up Upstream, s *Source) *tap {
	return &tap{up: up, h: NewProxy(s.ctx, up, s.store, s.client, s.log, s.clock)}
}

func (t *tap) set(up Upstream, s *Source) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if sameUpstream(t.up, up) {
		return
	}
	t.up, t.h = up, NewProxy(s.ctx, up, s.store, s.client, s.log, s.clock)
}

func (t *tap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.mu.RLock()
	h := t.h
	t.mu.RUnlock()
	h.ServeHTTP(w, r)
}
