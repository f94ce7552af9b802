// Command amp-exporter exposes what AI agents cost and how they behave as
// Prometheus metrics, from Amp thread files.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/app"
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
	externalNames []string
	server        app.ServerLimits
	log           *promslog.Config
	backfill      backfillFlags
	report        reportFlags
	statusline    statuslineFlags
	workspace     workspaceFlags
}

func parseFlags(args []string, stdout, stderr io.Writer) (*flags, int, bool) {
	cli := kingpin.New("amp-exporter", appHelp)
	cli.UsageWriter(stdout)
	cli.ErrorWriter(stderr)
	f := &flags{log: &promslog.Config{Writer: stderr}}
	cli.Flag("config.file", "Configuration file (YAML, one document; see config.example.yaml). Without one: the zero-configuration rules above.").
		Default("").StringVar(&f.configFile)
	cli.Flag("config.check", "Validate the configuration and exit.").BoolVar(&f.configCheck)
	cli.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&f.telemetryPath)
	cli.Flag("storage.path", "Directory where counting state is kept across restarts (empty: none; totals of deleted threads are then lost on restart).").
		Default("").StringVar(&f.storagePath)
	cli.Flag("storage.save-interval", "How often changed counting state is saved.").Hidden().
		Default(app.StateSaveInterval.String()).DurationVar(&f.saveInterval)
	f.web = kingpinflag.AddFlags(cli, DefaultListenAddress)
	cli.Flag("web.external-name", "A DNS name clients reach the exporter by (Prometheus, a browser, report --exporter), besides localhost, IP addresses, "+
		"the listen address and the machine's host name; requests to any other name are refused (DNS rebinding; see docs/security.md). Repeatable.").
		PlaceHolder("NAME").StringsVar(&f.externalNames)
	addServerFlags(cli, &f.server)
	flag.AddFlags(cli, f.log)
	cli.Command("serve", "Run the exporter (the default command).").Default()
	ingest := cli.Command("ingest", "Copy stdin to stdout and stream it to an exporter's "+app.IngestPath+
		" endpoint: amp -x --stream-json … | amp-exporter ingest")
	ingest.Flag("url", "Ingest endpoint.").Default("http://127.0.0.1" + DefaultListenAddress + app.IngestPath).StringVar(&f.ingest.url)
	ingest.Flag("basic-auth.username", "Basic auth user, when the exporter's --web.config.file asks for one.").StringVar(&f.ingest.user)
	ingest.Flag("basic-auth.password-file", "File holding the basic auth password.").StringVar(&f.ingest.passwordFile)
	ingest.Flag("retry.max-attempts", "Requests made at most for one run: an exporter serving its most requests at once answers 429 "+
		"before reading anything, and the run is sent again, whole, after the Retry-After it asks for (plus up to half of it, at random).").
		Default(fmt.Sprint(defaultIngestAttempts)).IntVar(&f.ingest.maxAttempts)
	ingest.Flag("retry.max-wait", "Longest wait before one retry, whatever Retry-After says.").
		Default(defaultIngestMaxWait.String()).DurationVar(&f.ingest.maxWait)
	addBackfillCommand(cli, &f.backfill)     // backfill.go
	addReportCommand(cli, &f.report)         // report.go
	addStatuslineCommand(cli, &f.statusline) // statusline.go
	addWorkspaceCommand(cli, &f.workspace)   // workspace.go
	cli.Version(version.Print("amp-exporter"))
	cli.HelpFlag.Short('h')
	exited := false
	code := 0
	cli.Terminate(func(c int) { exited, code = true, c })
	cmd, err := cli.Parse(args)
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
	if f.command == "statusline" {
		return runStatusline(f.statusline, stdout)
	}
	if f.command == "workspace check" {
		return runWorkspaceCheck(f, stdout, stderr)
	}
	if f.command == "backfill" {
		return runBackfill(f, stdout, stderr)
	}
	if strings.HasPrefix(f.command, "report ") {
		return runReport(f, stdout, stderr)
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
	a, err := app.New(app.Options{
		ConfigFile:    f.configFile,
		Env:           env,
		Config:        cfg,
		Logger:        logger,
		TelemetryPath: f.telemetryPath,
		Web:           f.web,
		ExternalNames: f.externalNames,
		Limits:        f.server,
		StoragePath:   f.storagePath,
		SaveInterval:  f.saveInterval,
	})
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}

	ctx, stop := handleSignals(a, logger)
	defer stop()
	if err := a.Run(ctx); err != nil {
		logger.Error("exiting", "err", err)
		return 1
	}
	return 0
}

// handleSignals turns SIGINT and SIGTERM into the end of the returned
// context (the application then shuts down in order: see App.Run) and
// SIGHUP into a reload; stop undoes it.
func handleSignals(a *app.App, logger *slog.Logger) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	term := make(chan os.Signal, 1)
	signal.Notify(term, os.Interrupt, syscall.SIGTERM)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case s := <-term:
				logger.Info("shutting down", "signal", s.String())
				cancel()
				return
			case <-hup:
				go a.RequestReload(ctx) // the reload logs its outcome
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(term)
		signal.Stop(hup)
		cancel()
	}
}

// addServerFlags registers the limits of the HTTP servers.
func addServerFlags(cli *kingpin.Application, s *app.ServerLimits) {
	cli.Flag("web.max-requests", "Maximum number of parallel scrape requests (and, apart, of landing page requests). Use 0 to disable.").
		Default(fmt.Sprint(app.DefaultMaxRequests)).IntVar(&s.MaxRequests)
	cli.Flag("web.max-connections", "Maximum number of open HTTP connections per server (the main one, and each Amy proxy). When full, the oldest connection that is not serving a request (silent, half a header, or idle keep-alive) is closed to make room. Use 0 to disable.").
		Default(fmt.Sprint(app.DefaultMaxConnections)).IntVar(&s.MaxConnections)
}
