// Command amp-exporter exposes what AI agents cost and how they behave as
// Prometheus metrics, from Amp thread files.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	rungroup "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/pricing"
	amysource "github.com/amp-exporter/amp-exporter/source/amy"
	"github.com/amp-exporter/amp-exporter/source/streams"
	"github.com/amp-exporter/amp-exporter/source/threads"
	"github.com/amp-exporter/amp-exporter/state"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// DefaultListenAddress is the exporter's port. The Prometheus wiki's
// 9100–9999 exporter range has been fully claimed since 2023; 9974 was free
// in every copy of the allocation list and every code search available when
// it was chosen (see docs/running.md, "Flags and endpoints").
const DefaultListenAddress = ":9974"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func init() {
	// `go run` and `go install` builds carry no -ldflags version.
	if version.Version == "" {
		version.Version = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version.Version = bi.Main.Version
		}
	}
}

type flags struct {
	command       string
	ingest        ingestOptions
	configFile    string
	configCheck   bool
	telemetryPath string
	storagePath   string
	saveInterval  time.Duration // hidden: how often the state is saved (tests)
	web           *web.FlagConfig
	server        serverFlags
	log           *promslog.Config
	backfill      backfillFlags
}

func parseFlags(args []string, stdout, stderr io.Writer) (*flags, int, bool) {
	app := kingpin.New("amp-exporter", appHelp)
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	f := &flags{log: &promslog.Config{Writer: stderr}}
	app.Flag("config.file", "Configuration file (YAML, one document; see config.example.yaml). Without one: the zero-configuration rules above.").
		Default("").StringVar(&f.configFile)
	app.Flag("config.check", "Validate the configuration and exit.").BoolVar(&f.configCheck)
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&f.telemetryPath)
	app.Flag("storage.path", "Directory where counting state is kept across restarts (empty: none; totals of deleted threads are then lost on restart).").
		Default("").StringVar(&f.storagePath)
	app.Flag("storage.save-interval", "How often changed counting state is saved.").Hidden().
		Default(stateSaveInterval.String()).DurationVar(&f.saveInterval)
	f.web = kingpinflag.AddFlags(app, DefaultListenAddress)
	addServerFlags(app, &f.server)
	flag.AddFlags(app, f.log)
	app.Command("serve", "Run the exporter (the default command).").Default()
	ingest := app.Command("ingest", "Copy stdin to stdout and stream it to an exporter's "+IngestPath+
		" endpoint: amp -x --stream-json … | amp-exporter ingest")
	ingest.Flag("url", "Ingest endpoint.").Default("http://127.0.0.1" + DefaultListenAddress + IngestPath).StringVar(&f.ingest.url)
	ingest.Flag("basic-auth.username", "Basic auth user, when the exporter's --web.config.file asks for one.").StringVar(&f.ingest.user)
	ingest.Flag("basic-auth.password-file", "File holding the basic auth password.").StringVar(&f.ingest.passwordFile)
	addBackfillCommand(app, &f.backfill) // backfill.go
	app.Version(version.Print("amp-exporter"))
	app.HelpFlag.Short('h')
	exited := false
	code := 0
	app.Terminate(func(c int) { exited, code = true, c })
	cmd, err := app.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "amp-exporter: %v (try --help)\n", err)
		return nil, 2, true
	}
	f.command = cmd
	if exited {
		return nil, code, true
	}
	return f, 0, false
}

func run(args []string, stdout, stderr io.Writer) int {
	f, code, done := parseFlags(args, stdout, stderr)
	if done {
		return code
	}
	if f.command == "ingest" {
		return runIngest(f.ingest, os.Stdin, stdout, stderr)
	}
	if f.command == "backfill" {
		return runBackfill(f, stdout, stderr)
	}
	logger := promslog.New(f.log)
	env := config.OSEnv()

	cfg, err := config.Load(f.configFile, env)
	if err != nil {
		logger.Error("invalid configuration", "err", err)
		return 1
	}
	if f.configCheck {
		fmt.Fprintf(stdout, "configuration is valid\n%s", cfg)
		return 0
	}
	logger.Info("starting amp-exporter", "version", version.Info(), "build", version.BuildContext())
	logger.Info("watching thread directories", "dirs", cfg.Threads.Dirs)
	if len(cfg.Streams.Dirs) > 0 {
		logger.Info("tailing stream-json directories", "dirs", cfg.Streams.Dirs)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector("amp_exporter"),
	)
	metrics := collector.NewExporterMetrics(reg)
	metrics.ConfigLoaded(true, time.Now())
	labels := ampstore.NewLabelCap(cfg.Limits.MaxLabelValues, metrics.LabelFolded)
	store := ampstore.NewThreadStore(ampstore.StoreOptions{Labels: labels})
	streamStore := ampstore.NewStreamStore(labels, nil)
	amp := collector.NewAmpCollector(store, streamStore)
	// A source's families wait for its first pass (docs/running.md); ready
	// (/-/ready, remote-write) for both local ones.
	var ready, scanned, streamsRead atomic.Bool
	readyIfRead := func() {
		if scanned.Load() && streamsRead.Load() {
			ready.Store(true)
		}
	}
	amp.SetReady(ampstore.SourceThreads, scanned.Load)
	amp.SetReady(ampstore.SourceStream, streamsRead.Load)
	ampSrv, err := newServerSource(cfg, env, logger, reg, labels, metrics, store, streamStore, amp) // ampserver.go
	if err != nil {
		logger.Error("invalid configuration", "err", err)
		return 1
	}
	reg.MustRegister(amp)
	amyStore := ampstore.NewAmyStore(labels, nil)
	amyStore.SetUpstreams(upstreamNames(cfg))
	amyStore.SetTurnTimeout(longestTurnTimeout(cfg))
	reg.MustRegister(collector.NewAmyCollector(amyStore))

	embeddedPrices, err := pricing.Embedded(nil)
	if err != nil {
		logger.Error("embedded price table", "err", err)
		return 1
	}
	pricer, err := buildPricer(cfg.Pricing, embeddedPrices)
	if err != nil {
		logger.Error("invalid configuration", "err", err)
		return 1
	}
	store.SetPrices(pricer)
	streamStore.SetPrices(pricer)
	if ampSrv != nil {
		ampSrv.store.SetPrices(pricer)
	}
	metrics.PricingInUse(pricer.Source, pricer.Version)

	var keepers []*state.Keeper
	if f.storagePath != "" {
		k, err := state.Open(state.Options{Dir: f.storagePath, Metrics: metrics, Logger: logger,
			Stores: state.Stores{Threads: store, Server: ampSrv.threadStore(), Streams: streamStore, Amy: amyStore, Labels: labels}})
		if err != nil {
			logger.Error("cannot use storage path", "path", f.storagePath, "err", err)
			return 1
		}
		keepers = append(keepers, k)
	}

	if ampSrv != nil {
		ampSrv.seed(store, streamStore)
	}

	watcher := threads.New(watcherConfig(cfg), threads.Options{
		Logger:      logger,
		Clock:       clock.Real{},
		Workers:     runtime.GOMAXPROCS(0),
		OnFirstScan: func() { scanned.Store(true); readyIfRead(); ampSrv.scanned() },
	}, store, metrics)
	tailer := streams.NewTailer(tailConfig(cfg), streamStore, metrics, logger, clock.Real{})
	tailer.OnFirstPass = func() { streamsRead.Store(true); readyIfRead() }
	amyClient := amysource.NewClient(amyStore, logger, nil, clock.Real{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proxies, err := amyProxies(ctx, cfg, amyStore, amyClient, logger)
	if err != nil {
		logger.Error("invalid configuration", "err", err)
		return 1
	}

	reloads := make(chan reloadRequest)
	rl := &reloader{
		path: f.configFile, env: env, current: cfg, labels: labels, watcher: watcher, tailer: tailer,
		threadStore: store, streamStore: streamStore, embeddedPrices: embeddedPrices,
		amyStore: amyStore, amyClient: amyClient, serverStore: ampSrv.threadStore(),
		metrics: metrics, log: logger, requests: reloads,
	}
	ingestHandler := streams.NewIngestHandler(rl.ingestConfig, streamStore, metrics, logger)
	ingestHandler.SetTrusted(remoteWritesAllowed(*f.web.WebConfigFile))
	var ingest http.Handler = ingestHandler
	for _, k := range keepers {
		ingest = durableIngest(ingest, k, logger) // an ingest is answered once saved
	}

	mux := http.NewServeMux()
	if err := routes(mux, routeDeps{
		telemetryPath: f.telemetryPath,
		registry:      reg,
		ready:         &ready,
		reloads:       reloads,
		config:        rl.config,
		ingest:        ingest,
		ingestEnabled: rl.ingestEnabled,
		logger:        logger,
		maxRequests:   f.server.maxRequests,
		remoteWrites:  remoteWritesAllowed(*f.web.WebConfigFile),
		sources: sourceProviders(landingInputs{
			cfg: rl.currentConfig, ready: scanned.Load, account: ampSrv.accountName,
			defaultDirs: config.DefaultThreadsDirs(env),
			threads:     storeThreads(store, ampSrv.threadStore()),
			shown:       amp.Ready,
		}),
	}); err != nil {
		logger.Error("cannot set up HTTP routes", "err", err)
		return 1
	}
	server := &http.Server{Handler: mux}
	hardenServer(server)

	var g rungroup.Group
	g.Add(func() error { return watcher.Run(ctx) }, func(error) { cancel() })
	g.Add(func() error { return tailer.Run(ctx) }, func(error) { cancel() })
	g.Add(func() error {
		followConfiguredTurns(ctx, cfg, amyClient)
		return pruneAmy(ctx, amyStore, amyClient)
	}, func(error) { cancel() })
	for _, p := range proxies {
		g.Add(func() error {
			logger.Info("Amy proxy listening", "upstream", p.upstream, "address", p.server.Addr, "to", p.target)
			if err := p.serve(f.server.maxConnections, logger); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("amy proxy %s: %w", p.upstream, err)
			}
			return nil
		}, func(error) {
			shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
			defer done()
			_ = p.server.Shutdown(shutdownCtx)
		})
	}
	g.Add(func() error { return rl.run(ctx) }, func(error) { cancel() })
	if ampSrv != nil {
		g.Add(func() error { return ampSrv.run(ctx) }, func(error) { cancel() })
	}
	for _, k := range keepers {
		g.Add(func() error { return runStateKeeper(ctx, k, f.saveInterval, logger) }, func(error) { cancel() })
	}
	g.Add(func() error {
		err := listenAndServe(server, f.web, f.server.maxConnections, logger)
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("web server: %w", err)
	}, func(error) {
		shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = server.Shutdown(shutdownCtx)
	})
	{
		term := make(chan os.Signal, 1)
		signal.Notify(term, os.Interrupt, syscall.SIGTERM)
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		g.Add(func() error {
			for {
				select {
				case s := <-term:
					logger.Info("shutting down", "signal", s.String())
					return nil
				case <-hup:
					go rl.request(ctx) // the reloader logs the outcome
				case <-ctx.Done():
					return nil
				}
			}
		}, func(error) {
			signal.Stop(term)
			signal.Stop(hup)
			cancel()
		})
	}
	if rl.remoteWrite, err = addRemoteWrite(&g, ctx, cancel, cfg, reg, ready.Load, logger); err != nil {
		logger.Error("invalid configuration", "err", err)
		return 1
	}
	if err := g.Run(); err != nil {
		logger.Error("exiting", "err", err)
		return 1
	}
	return 0
}

func tailConfig(cfg *config.Config) streams.TailConfig {
	return streams.TailConfig{
		Dirs:         cfg.Streams.Dirs,
		PollInterval: time.Duration(cfg.Streams.PollInterval),
		MaxLineBytes: int(cfg.Streams.MaxLineBytes),
	}
}

func watcherConfig(cfg *config.Config) threads.Config {
	return threads.Config{
		Dirs:           cfg.Threads.Dirs,
		ResyncInterval: time.Duration(cfg.Threads.ResyncInterval),
		PollInterval:   time.Duration(cfg.Threads.PollInterval),
		MaxFileBytes:   int64(cfg.Limits.MaxFileBytes),
	}
}
