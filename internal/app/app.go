// Package app is the exporter as one application built from options (the
// flags' values and the configuration): stores, collectors, sources, the
// state keeper and the HTTP servers. Start-up and every reload run the same
// list of named apply steps; Run serves until its context ends and then
// shuts down in order (drain HTTP, stop reloads, stop the sources, final
// save, last remote-write pushes). cmd/amp-exporter is its flags and
// signals; tests build an App without either.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/pricing"
	"github.com/amp-exporter/amp-exporter/source"
	"github.com/amp-exporter/amp-exporter/source/ampserver"
	"github.com/amp-exporter/amp-exporter/source/amy"
	"github.com/amp-exporter/amp-exporter/source/streams"
	"github.com/amp-exporter/amp-exporter/source/threads"
	"github.com/amp-exporter/amp-exporter/source/workspace"
	"github.com/amp-exporter/amp-exporter/state"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// Options are what an exporter is built from: the flags' values and the
// configuration loaded at start. Tests build them without flags.
type Options struct {
	// ConfigFile is read again on every reload ("" for the defaults).
	ConfigFile string
	Env        config.Env
	Config     *config.Config
	Logger     *slog.Logger

	TelemetryPath string
	Web           *web.FlagConfig
	Limits        ServerLimits
	// StoragePath keeps the counting state across restarts ("" for none).
	StoragePath  string
	SaveInterval time.Duration
	// ExternalNames are names, besides loopback ones and IP literals, that
	// clients reach the exporter's servers by (--web.external-name): a
	// request to any other name is refused (hostcheck.go).
	ExternalNames []string
	// DrainTimeout bounds how long shutdown waits for HTTP requests under
	// way (an ingest streaming its body, an Amy event stream through a
	// proxy) before it closes their connections (0: defaultDrainTimeout).
	DrainTimeout time.Duration
}

// defaultDrainTimeout is the HTTP servers' grace period at shutdown.
const defaultDrainTimeout = 5 * time.Second

// App is one exporter: stores, collectors, sources, the state keeper and
// the HTTP servers, built from options. Start-up and every reload run the
// same list of apply steps; Run serves until its context ends, then shuts
// down in order (see Run).
type App struct {
	o   Options
	log *slog.Logger

	reg       *prometheus.Registry
	metrics   *collector.ExporterMetrics
	labels    *ampstore.LabelCap
	threads   *ampstore.ThreadStore
	streams   *ampstore.StreamStore
	amyStore  *ampstore.AmyStore
	ampServer *ampServerSource // nil while the Amp server source is off
	workspace *workspaceSource // nil while the workspace source is off
	keeper    *state.Keeper    // nil without --storage.path
	amp       *collector.AmpCollector
	amy       *amy.Source
	sources   []source.Source
	rw        *remoteWriters
	otlp      *otlpPushers
	starts    *ampstore.SeriesStarts // the OTLP push's series start times, kept by the keeper
	steps     []applyStep
	embedded  *pricing.GenAIPrices

	// ready: the first passes over the local sources are done (/-/ready,
	// remote-write); scanned and streamsRead each source's own, which
	// also let its families onto /metrics (docs/running.md).
	ready, scanned, streamsRead atomic.Bool
	// spend sums the ledger for the landing page and /api/spend.
	spend *spendInputs
	// zone is ledger.timezone, set by its apply step.
	zone    atomic.Pointer[time.Location]
	reloads chan reloadRequest

	mu      sync.RWMutex
	current *config.Config

	// names are the Host names every server answers to (hostcheck.go).
	names   hostNames
	web     *http.Server
	proxies []amyProxy
	// ingests counts ingest requests under way: shutdown waits for them
	// before the final save, even those whose connection it had to close.
	ingests inflight
}

// inflight counts requests under way; wait returns when there are none.
type inflight struct {
	mu   sync.Mutex
	n    int
	none *sync.Cond
}

func (f *inflight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	if f.n--; f.n == 0 && f.none != nil {
		f.none.Broadcast()
	}
	f.mu.Unlock()
}

func (f *inflight) wait() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.none == nil {
		f.none = sync.NewCond(&f.mu)
	}
	for f.n > 0 {
		f.none.Wait()
	}
}

type reloadRequest struct {
	reply chan<- error
}

// New builds the exporter and applies its configuration: nothing runs
// until Run.
func New(o Options) (a *App, err error) {
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = defaultDrainTimeout
	}
	a = &App{o: o, log: o.Logger, reloads: make(chan reloadRequest)}
	hostname, _ := os.Hostname() // none known: only the other names are served
	if a.names, err = newHostNames(hostname, o.ExternalNames); err != nil {
		return nil, err
	}
	cfg := o.Config
	a.reg = prometheus.NewRegistry()
	a.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector("amp_exporter"),
	)
	a.metrics = collector.NewExporterMetrics(a.reg)
	a.labels = ampstore.NewLabelCap(cfg.Limits.MaxLabelValues, a.metrics.LabelFolded)
	repos := ampstore.NewRepositories(a.metrics.RepositoryUnreadable)
	a.threads = ampstore.NewThreadStore(ampstore.StoreOptions{Labels: a.labels, Repositories: repos})
	a.streams = ampstore.NewStreamStore(a.labels, nil)
	amp := collector.NewAmpCollector(a.threads, a.streams)
	amp.SetRepositories(repos)
	a.amp = amp
	// The server source's store must exist before the state is restored
	// and before the Amp collector is registered (ampserver.go).
	if a.ampServer, err = newServerSource(cfg, o.Env, a.log, a.reg, a.labels, a.metrics, a.threads, a.streams, amp); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if a.workspace, err = newWorkspaceSource(cfg, a.log, a.reg, a.labels, repos, o.StoragePath); err != nil {
		return nil, fmt.Errorf("invalid configuration: amp_workspace: %w", err)
	}
	amp.SetReady(ampstore.SourceThreads, a.scanned.Load)
	amp.SetReady(ampstore.SourceStream, a.streamsRead.Load)
	a.reg.MustRegister(amp)
	a.amyStore = ampstore.NewAmyStore(a.labels, nil)
	a.reg.MustRegister(collector.NewAmyCollector(a.amyStore))
	if a.embedded, err = pricing.Embedded(nil); err != nil {
		return nil, fmt.Errorf("embedded price table: %w", err)
	}

	a.amy = amy.NewSource(a.amyStore, amy.SourceOptions{Logger: a.log})
	var server source.Source = ampserver.Off()
	if a.ampServer != nil {
		server = ampserver.NewSource(a.ampServer.syncer, a.ampServer.firstScan)
	}
	var wsSource source.Source = workspace.Off()
	if a.workspace != nil {
		wsSource = a.workspace.runner()
	}
	readyIfRead := func() {
		if a.scanned.Load() && a.streamsRead.Load() && !a.ready.Swap(true) && a.spend != nil {
			// The first spend summary is made now, so that the first
			// statusline to ask finds one rather than waiting for it.
			go a.spend.summary(false)
		}
	}
	tailer := streams.NewSource(a.streams, a.metrics, a.log, clock.Real{})
	tailer.OnFirstPass = func() { a.streamsRead.Store(true); readyIfRead() }
	a.sources = []source.Source{
		threads.NewSource(threads.Options{
			Logger:      a.log,
			Clock:       clock.Real{},
			Workers:     runtime.GOMAXPROCS(0),
			OnFirstScan: func() { a.scanned.Store(true); readyIfRead(); a.ampServer.scanned() },
		}, a.threads, a.metrics),
		tailer,
		server,
		wsSource,
		a.amy,
	}
	rw := newRemoteWriters(a.reg, a.ready.Load, a.log)
	a.rw = rw
	a.starts = ampstore.NewSeriesStarts()
	op := newOTLPPushers(a.reg, a.ready.Load, a.starts, a.log)
	a.otlp = op
	defer func() {
		if err != nil {
			rw.stop() // none has pushed: the first push waits for the first scan
			op.stop()
		}
	}()
	a.steps = a.applySteps()
	if err := a.apply(cfg, false); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	a.current = cfg
	a.metrics.ConfigLoaded(true, time.Now())

	if o.StoragePath != "" {
		k, err := state.Open(state.Options{Dir: o.StoragePath, Metrics: a.metrics, Logger: a.log,
			Stores: state.Stores{Threads: a.threads, AmpServer: a.ampServer.threadStore(), Streams: a.streams, Amy: a.amyStore, Labels: a.labels,
				SeriesStarts: a.starts}})
		if err != nil {
			return nil, fmt.Errorf("cannot use storage path %q: %w", o.StoragePath, err)
		}
		a.keeper = k
	}
	if a.ampServer != nil {
		a.ampServer.seed(a.threads, a.streams)
	}
	a.keepRestoredStarts()
	if a.proxies, err = amyProxies(cfg, a.amy, a.names); err != nil {
		a.closeKeeper()
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if err := a.buildWeb(); err != nil {
		a.closeKeeper()
		return nil, err
	}
	return a, nil
}

// closeKeeper gives the storage directory back when start-up fails after
// the state was restored.
func (a *App) closeKeeper() {
	if a.keeper != nil {
		_ = a.keeper.Close()
	}
}

// applyStep is one part of putting a configuration into effect, named
// after the configuration section it applies (Prometheus's reloaders).
// The same steps, in the same order, run at start-up and on every reload.
type applyStep struct {
	name string
	// prepare, when set, builds what apply needs and may refuse the
	// configuration; it changes nothing, so a refused configuration
	// leaves everything as it was.
	prepare func(cfg *config.Config) error
	// apply puts cfg into effect. An error wrapping source.ErrRestart
	// says that part of it waits for the next restart; the rest applies.
	apply func(cfg *config.Config) error
}

// applySteps lists the steps: the label cap and the prices first (so
// that what the sources count next is capped and priced by the new
// configuration), then every source, then the remote-write and OTLP
// senders.
func (a *App) applySteps() []applyStep {
	var pricer *pricing.Pricer
	var plan *rwPlan
	var oplan *otlpPlan
	steps := []applyStep{
		{name: "limits", apply: func(cfg *config.Config) error {
			// limits.max_file_bytes is applied by the sources that read
			// it (threads; amp_server needs a restart).
			a.labels.SetMax(cfg.Limits.MaxLabelValues)
			return nil
		}},
		{name: "pricing", prepare: func(cfg *config.Config) (err error) {
			pricer, err = BuildPricer(cfg.Pricing, a.embedded)
			return err
		}, apply: func(*config.Config) error {
			a.threads.SetPrices(pricer)
			a.streams.SetPrices(pricer)
			if st := a.ampServer.threadStore(); st != nil {
				st.SetPrices(pricer)
			}
			a.metrics.PricingInUse(pricer.Source, pricer.Version)
			return nil
		}},
	}
	steps = append(steps, a.repositorySteps()...)
	steps = append(steps, applyStep{name: "ledger", apply: func(cfg *config.Config) error {
		// The spend's days are taken in this zone from the next request on;
		// the ledger itself is in UTC buckets and does not change, but a
		// long thread's oldest rows are coarsened within this zone's days
		// from now on (rows coarsened before stay as they are).
		a.zone.Store(cfg.Ledger.Location())
		a.threads.SetLedgerZone(cfg.Ledger.Location())
		if st := a.ampServer.threadStore(); st != nil {
			st.SetLedgerZone(cfg.Ledger.Location())
		}
		return nil
	}})
	for _, s := range a.sources {
		steps = append(steps, applyStep{name: s.Name(), apply: s.Apply})
	}
	return append(steps, applyStep{name: "remote_write", prepare: func(cfg *config.Config) (err error) {
		plan, err = a.rw.prepare(cfg)
		return err
	}, apply: func(*config.Config) error {
		a.rw.commit(plan)
		return nil
	}}, applyStep{name: "otlp", prepare: func(cfg *config.Config) (err error) {
		oplan, err = a.otlp.prepare(cfg)
		return err
	}, apply: func(*config.Config) error {
		a.otlp.commit(oplan)
		return nil
	}})
}

// apply runs every step's prepare, then every step's apply, each timed: a
// prepare that fails refuses cfg before anything changed; a step whose
// change needs a restart is logged once, naming its section, and the
// others still apply.
func (a *App) apply(cfg *config.Config, reload bool) error {
	start := time.Now()
	for _, s := range a.steps {
		if s.prepare == nil {
			continue
		}
		t := time.Now()
		if err := s.prepare(cfg); err != nil {
			a.log.Error("configuration step failed", "step", s.name, "duration", time.Since(t), "err", err)
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	var errs []error
	timings := make([]any, 0, len(a.steps))
	for _, s := range a.steps {
		t := time.Now()
		err := s.apply(cfg)
		d := time.Since(t)
		timings = append(timings, slog.Duration(s.name, d))
		switch {
		case err == nil:
		case errors.Is(err, source.ErrRestart):
			a.log.Warn("configuration change needs a restart; the rest of the configuration is applied", "section", s.name, "err", err)
		default:
			// No step fails here today (the configuration was validated
			// and prepared); should one, the others still apply.
			a.log.Error("configuration step failed; the other steps are applied", "step", s.name, "duration", d, "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	msg := "configuration applied"
	if reload {
		msg = "configuration reloaded"
	}
	a.log.Info(msg, "duration", time.Since(start), slog.Group("steps", timings...))
	return nil
}

// reload reads the configuration file again and applies it; a file that
// does not load or a step that refuses it keeps the previous configuration.
func (a *App) reload() error {
	cfg, err := config.Load(a.o.ConfigFile, a.o.Env)
	if err == nil {
		err = a.apply(cfg, true)
	}
	if err != nil {
		a.metrics.ConfigLoaded(false, time.Now())
		a.log.Error("configuration reload failed, keeping the previous configuration", "err", err)
		return err
	}
	a.mu.Lock()
	a.current = cfg
	a.mu.Unlock()
	a.metrics.ConfigLoaded(true, time.Now())
	return nil
}

// RequestReload asks for a reload and waits for it (SIGHUP); reloads go
// through Run's one goroutine, so they never race.
func (a *App) RequestReload(ctx context.Context) {
	reply := make(chan error, 1)
	select {
	case a.reloads <- reloadRequest{reply: reply}:
		<-reply
	case <-ctx.Done():
	}
}

// currentConfig is the configuration in effect (it changes on reload).
func (a *App) currentConfig() *config.Config {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.current
}

func (a *App) ingestConfig() streams.IngestConfig { return streams.IngestConfigOf(a.currentConfig()) }

func (a *App) ingestEnabled() bool { return a.currentConfig().Streams.Ingest.Enabled }

func (a *App) configText() string { return a.currentConfig().String() }

// buildWeb sets up the main HTTP server's routes.
func (a *App) buildWeb() error {
	ingestHandler := streams.NewIngestHandler(a.ingestConfig, a.streams, a.metrics, a.log)
	ingestHandler.SetTrusted(remoteWritesAllowed(*a.o.Web.WebConfigFile))
	var ingest http.Handler = ingestHandler
	if a.keeper != nil {
		ingest = durableIngest(ingest, a.keeper, a.log) // an ingest is answered 200 once saved
	}
	inner := ingest
	ingest = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.ingests.add()
		defer a.ingests.done()
		inner.ServeHTTP(w, r)
	})
	a.spend = &spendInputs{
		ledger:      a.ledgerReader(),
		zone:        a.zone.Load,
		entitlement: a.ampServer.entitlement,
		now:         time.Now,
		cache:       &spendCache{},
	}
	mux := http.NewServeMux()
	if err := routes(mux, routeDeps{
		telemetryPath: a.o.TelemetryPath,
		registry:      a.reg,
		ready:         &a.ready,
		reloads:       a.reloads,
		config:        a.configText,
		ingest:        ingest,
		ingestEnabled: a.ingestEnabled,
		logger:        a.log,
		maxRequests:   a.o.Limits.MaxRequests,
		remoteWrites:  remoteWritesAllowed(*a.o.Web.WebConfigFile),
		sources: sourceProviders(landingInputs{
			cfg: a.currentConfig, ready: a.scanned.Load, account: a.ampServer.accountName,
			defaultDirs: config.DefaultThreadsDirs(a.o.Env),
			threads:     storeThreads(a.threads, a.ampServer.threadStore()),
			shown:       a.amp.Ready,
		}),
		spend: a.spend,
	}); err != nil {
		return fmt.Errorf("cannot set up HTTP routes: %w", err)
	}
	var listen []string
	if a.o.Web.WebListenAddresses != nil {
		listen = *a.o.Web.WebListenAddresses
	}
	// Every path, ingest and reload included, answers only the exporter's
	// own names; every answer carries the browser hardening headers.
	a.web = &http.Server{Handler: pageHeaders(refuseOtherHosts(a.names.with(listen), mux))}
	hardenServer(a.web)
	return nil
}

// Run serves until ctx ends or a part fails, then shuts down in this
// order, so that nothing counted is lost and nothing acknowledged is
// unsaved:
//
//  1. stop accepting connections and drain the HTTP servers (the main one
//     and the Amy proxies): requests under way finish, an ingest among
//     them is still saved before it is answered; after the drain timeout
//     the remaining connections are closed, and the ingest handlers are
//     waited for (what they counted is in the stores);
//  2. stop the reloads (a reload under way finishes, or is cut short by
//     step 3 if it waits for a source);
//  3. stop the sources, and wait for each to return (what they were
//     counting is in the stores);
//  4. the final save, and the storage directory is given back;
//  5. the remote-write senders' last pushes.
func (a *App) Run(ctx context.Context) error {
	failed := make(chan error, len(a.sources)+len(a.proxies)+2)

	srcCtx, stopSources := context.WithCancel(context.Background())
	defer stopSources()
	var sources sync.WaitGroup
	for _, s := range a.sources {
		sources.Go(func() {
			if err := s.Run(srcCtx); err != nil {
				failed <- fmt.Errorf("%s source: %w", s.Name(), err)
			}
		})
	}

	keeperCtx, stopKeeper := context.WithCancel(context.Background())
	defer stopKeeper()
	var keeper sync.WaitGroup
	if a.keeper != nil {
		keeper.Go(func() { _ = runStateKeeper(keeperCtx, a.keeper, a.o.SaveInterval, a.log) })
	}

	reloadCtx, stopReloads := context.WithCancel(context.Background())
	defer stopReloads()
	var reloads sync.WaitGroup
	reloads.Go(func() {
		for {
			select {
			case <-reloadCtx.Done():
				return
			case req := <-a.reloads:
				req.reply <- a.reload()
			}
		}
	})

	var servers sync.WaitGroup
	for _, p := range a.proxies {
		servers.Go(func() {
			a.log.Info("Amy proxy listening", "upstream", p.upstream, "address", p.server.Addr, "to", p.target)
			if err := p.serve(a.o.Limits.MaxConnections, a.log); err != nil && !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("amy proxy %s: %w", p.upstream, err)
			}
		})
	}
	servers.Go(func() {
		if err := listenAndServe(a.web, a.o.Web, a.o.Limits.MaxConnections, a.log); err != nil && !errors.Is(err, http.ErrServerClosed) {
			failed <- fmt.Errorf("web server: %w", err)
		}
	})

	var err error
	select {
	case <-ctx.Done():
	case err = <-failed:
	}

	// Each step is timed: the log line at the end says where a slow
	// shutdown spent its time.
	var timings []any
	step := func(name string, f func()) {
		t := time.Now()
		f()
		timings = append(timings, slog.Duration(name, time.Since(t)))
	}
	// 1. Stop accepting, drain.
	step("drain", func() { a.drain(&servers) })
	// 2. No reload from now on; one under way finishes first, unless it
	// waits for a source still in its first scan: stopping the sources
	// ends that wait.
	stopReloads()
	if !waitFor(&reloads, a.o.DrainTimeout) {
		a.log.Warn("a reload under way at shutdown waits for a source; stopping the sources", "after", a.o.DrainTimeout)
	}
	// 3. Stop the sources.
	step("sources", func() {
		stopSources()
		sources.Wait()
		reloads.Wait()
	})
	// 4. The final save.
	step("save", func() {
		stopKeeper()
		keeper.Wait()
	})
	// 5. The last pushes.
	step("remote_write", a.rw.stop)
	step("otlp", a.otlp.stop)
	a.log.Info("stopped", slog.Group("steps", timings...))
	return err
}

// waitFor waits for wg at most d; it reports whether wg is done.
func waitFor(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// drain shuts the HTTP servers down: listeners closed at once, requests
// under way given the drain timeout, then their connections closed; it
// returns when every server has returned and every ingest handler is done.
func (a *App) drain(servers *sync.WaitGroup) {
	ctx, cancel := context.WithTimeout(context.Background(), a.o.DrainTimeout)
	defer cancel()
	all := []*http.Server{a.web}
	for _, p := range a.proxies {
		all = append(all, p.server)
	}
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() {
			if err := s.Shutdown(ctx); err != nil {
				a.log.Warn("requests still under way at shutdown were cut off", "after", a.o.DrainTimeout, "err", err)
				_ = s.Close()
			}
		})
	}
	wg.Wait()
	servers.Wait()
	a.ingests.wait()
}
