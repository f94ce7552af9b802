package app

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/version"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/source/ampserver"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// ampServerSource is the Amp server source, wired: its own counting store,
// the owners shared with the local stores, and the syncer.
type ampServerSource struct {
	store   *ampstore.ThreadStore
	owners  *ampstore.Owners
	syncer  *ampserver.Syncer
	client  *ampserver.Client
	keyFrom string
	urlFrom string
	log     *slog.Logger
	// firstScan is closed when the thread directories were first scanned:
	// a thread present as a local file is claimed by the file.
	firstScan chan struct{}
	scanOnce  sync.Once
	// account is the followed account's e-mail once getUserInfo answered
	// (for the landing page; never the key).
	account atomic.Pointer[string]
	// restored: the state held server threads, complete totals that may be
	// shown before the first sync (seed).
	restored atomic.Bool
	// passed: a sync went over the whole listing (ampserver.Stats.Passed).
	passed atomic.Bool
}

// newServerSource sets up the Amp server source, or returns nil when it
// is off (enabled: false, or auto without a key). It must run before the
// stores' states are restored and before the Amp collector is registered.
func newServerSource(cfg *config.Config, env config.Env, logger *slog.Logger, reg prometheus.Registerer,
	labels *ampstore.LabelCap, metrics *collector.ExporterMetrics,
	local *ampstore.ThreadStore, streams *ampstore.StreamStore, amp *collector.AmpCollector) (*ampServerSource, error) {
	a := cfg.AmpServer
	if a.Enabled == config.AmpServerOff {
		return nil, nil
	}
	oauthHTTP, err := promconfig.NewClientFromConfig(a.HTTPClient, "amp_oauth")
	if err != nil {
		return nil, fmt.Errorf("amp_server: %w", err)
	}
	// The login is refreshed only by syncs, which start after sm is set.
	var sm *collector.AmpServerMetrics
	onRefresh := func(outcome string) { sm.LoginRefreshed(outcome) }
	key, err := ampserver.FindKeyWith(ampserver.KeyOptions{APIKeyFile: a.APIKeyFile, URL: a.URL,
		Env: ampserver.KeyEnv{Getenv: env.Getenv, Home: env.Home}, RefreshLogin: a.RefreshLogin,
		OAuth: ampserver.OAuthOptions{HTTP: oauthHTTP, Logger: logger, Version: version.Version, OnRefresh: onRefresh}})
	if err != nil {
		if errors.Is(err, ampserver.ErrNoKey) && a.Enabled == config.AmpServerAuto {
			logger.Info("Amp server source off: no API key found (log in with the Amp CLI, set AMP_API_KEY or amp_server.api_key_file)")
			return nil, nil
		}
		return nil, fmt.Errorf("amp_server: %w", err)
	}
	sm = collector.NewAmpServerMetrics(reg, ampserver.Methods)
	if key.OAuth() {
		sm.LoginRefreshes(ampserver.RefreshOutcomes)
	}
	client, err := ampserver.NewClient(ampserver.Options{
		URL:              a.URL,
		Keys:             key,
		HTTP:             a.HTTPClient,
		Version:          version.Version,
		MaxResponseBytes: int64(cfg.Limits.MaxFileBytes) + 1<<20,
		OnRequest:        sm.Request,
		OnBytes:          sm.Bytes,
	})
	if err != nil {
		return nil, fmt.Errorf("amp_server: %w", err)
	}
	owners := ampstore.NewOwners()
	// The repository label's configuration is the local store's: one
	// switch, one set of rules for every thread.
	store := ampstore.NewThreadStore(ampstore.StoreOptions{Labels: labels, Repositories: local.Repositories()})
	store.SetClaim(owners, ampstore.SourceAmpServer)
	local.SetClaim(owners, ampstore.SourceThreads)
	streams.EnableAmpServerDedupe(owners)
	amp.SetAmpServerStore(store)
	src := &ampServerSource{store: store, owners: owners, client: client, keyFrom: key.Where, urlFrom: a.URLFrom,
		log: logger, firstScan: make(chan struct{})}
	syncer := ampserver.NewSyncer(client, ampserver.SyncConfig{
		Interval:        time.Duration(a.SyncInterval),
		FullInterval:    time.Duration(a.FullSyncInterval),
		IncludeArchived: a.IncludeArchived,
		InstallationID:  a.InstallationID,
		MaxConcurrency:  a.MaxConcurrency,
		MaxThreadBytes:  int64(cfg.Limits.MaxFileBytes),
		Billed:          true,
		DayBillHorizon:  time.Duration(a.DayBillsHorizon),
	}, store, ampserver.SyncOptions{
		Owners: owners, Metrics: metrics, Source: sm, Streams: streams, Logger: logger, Clock: clock.Real{},
		OnAccount: src.named, OnPass: func() { src.passed.Store(true) },
	})
	src.syncer = syncer
	// The server's families wait for its first pass over the listing (a
	// thread that keeps failing does not hide the others), unless a
	// restored state already holds its totals (docs/running.md).
	amp.SetReady(ampstore.SourceAmpServer, func() bool { return src.restored.Load() || sm.SyncedOnce() || src.passed.Load() })
	return src, nil
}

// named is called by the syncer when the server first names the account
// (at the first sync that gets past the key).
func (s *ampServerSource) named(u ampserver.UserInfo) {
	s.account.Store(&u.Email)
	s.log.Info("following this account's threads on the Amp server (turn off with amp_server.enabled: false)",
		"account", u.Email, "url", s.client.URL(), "url_from", s.urlFrom, "key_from", s.keyFrom)
}

// seed rebuilds who owns which thread from the restored states: local
// files first, then the server, then stream-json runs.
func (s *ampServerSource) seed(local *ampstore.ThreadStore, streams *ampstore.StreamStore) {
	s.owners.Seed(ampstore.SourceThreads, local.ThreadKeys())
	keys := s.store.ThreadKeys()
	s.restored.Store(len(keys) > 0)
	s.owners.Seed(ampstore.SourceAmpServer, keys)
	s.owners.Seed(ampstore.SourceStream, streams.StreamOwned())
}

// accountName is the followed account, "" while unknown or when the source
// is off.
func (s *ampServerSource) accountName() string {
	if s == nil {
		return ""
	}
	if a := s.account.Load(); a != nil {
		return *a
	}
	return ""
}

// scanned is called when the thread directories were first scanned; safe
// on a nil source and more than once.
func (s *ampServerSource) scanned() {
	if s == nil {
		return
	}
	s.scanOnce.Do(func() { close(s.firstScan) })
}

// threadStore is the server's store, nil when the source is off.
func (s *ampServerSource) threadStore() *ampstore.ThreadStore {
	if s == nil {
		return nil
	}
	return s.store
}
