package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
	_ "time/tzdata" // --timezone takes IANA names on systems without a zone database (Windows)

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"

	"github.com/amp-exporter/amp-exporter/backfill"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/ledger"
	"github.com/amp-exporter/amp-exporter/report"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// reportFlags are the flags of `amp-exporter report`.
type reportFlags struct {
	json         bool
	since, until string
	timezone     string
	last         int
	workers      int
	cacheDir     string
	offline      bool
	color        bool
	colorSet     bool
	compact      bool
	cost         bool
	ccusageCfg   string
	exporter     string
}

// addReportCommand declares the report subcommands.
func addReportCommand(app *kingpin.Application, r *reportFlags) {
	cmd := app.Command("report", "Print what was spent per day, month or thread, from the thread files and the Amp server the configuration names; "+
		"with --json, the JSON of `ccusage amp daily|monthly|session --json`. See docs/report.md.")
	cmd.Flag("json", "Print JSON (as ccusage does).").Short('j').BoolVar(&r.json)
	cmd.Flag("since", "First day, YYYY-MM-DD or YYYYMMDD.").Short('s').StringVar(&r.since)
	cmd.Flag("until", "Last day (inclusive), YYYY-MM-DD or YYYYMMDD.").Short('u').StringVar(&r.until)
	cmd.Flag("timezone", "Time zone days and months are taken in (IANA, e.g. Asia/Kolkata; default: the machine's).").Short('z').StringVar(&r.timezone)
	cmd.Flag("last", "Only the last N periods up to now (1: today, this month; for session: the N most recently active threads).").IntVar(&r.last)
	cmd.Flag("workers", "Thread files parsed at once.").Default(fmt.Sprint(runtime.GOMAXPROCS(0))).IntVar(&r.workers)
	cmd.Flag("cache-dir", "Where what the Amp server's threads spent is kept between reports, so that the next one downloads only the threads that changed (empty: nowhere).").
		Default(defaultCacheDir()).StringVar(&r.cacheDir)
	// ccusage's flags that scripts pass: --offline (the price table is
	// always the embedded one, or the configuration's), --color and
	// --no-color.
	cmd.Flag("offline", "Accepted for ccusage's scripts: prices always come from the embedded table and the configuration.").Short('O').BoolVar(&r.offline)
	cmd.Flag("compact", "Leave the cache columns out of the table (ccusage's --compact, for a narrow terminal).").BoolVar(&r.compact)
	cmd.Flag("cost", "Show the dollars in the table (--no-cost: leave them out, as ccusage's --no-cost; the JSON keeps them).").Default("true").BoolVar(&r.cost)
	cmd.Flag("config", "Accepted for ccusage's scripts and not read (one warning): ccusage's own configuration file; the report's settings come from --config.file.").
		PlaceHolder("FILE").StringVar(&r.ccusageCfg)
	cmd.Flag("color", "Draw the table in color (--no-color: never; default: on a terminal, unless NO_COLOR is set).").IsSetByUser(&r.colorSet).BoolVar(&r.color)
	cmd.Flag("exporter", "Ask the running exporter at this URL (e.g. http://localhost"+DefaultListenAddress+") for its ledger instead of reading the sources; the same report. "+
		"A user and password in the URL are sent as basic auth.").PlaceHolder("URL").StringVar(&r.exporter)
	cmd.Command("daily", "Usage per day (the default).").Default()
	cmd.Command("monthly", "Usage per month.")
	cmd.Command("session", "Usage per thread.")
}

// runReport runs `amp-exporter report daily|monthly|session`.
func runReport(f *flags, stdout, stderr io.Writer) int {
	if err := reportMain(f, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "amp-exporter report: %v\n", err)
		return 1
	}
	return 0
}

func reportMain(f *flags, stdout, stderr io.Writer) error {
	r := f.report
	opts := report.Options{Kind: report.Kind(strings.TrimPrefix(f.command, "report ")), Last: r.last, Now: time.Now(), Location: time.Local}
	var err error
	if r.timezone != "" {
		if opts.Location, err = time.LoadLocation(r.timezone); err != nil {
			return fmt.Errorf("--timezone: %w", err)
		}
	}
	if opts.Since, err = report.ParseDate(r.since); err != nil {
		return fmt.Errorf("--since: %w", err)
	}
	if opts.Until, err = report.ParseDate(r.until); err != nil {
		return fmt.Errorf("--until: %w", err)
	}
	// The options are checked before anything is read.
	if _, err := report.Build(nil, opts); err != nil {
		return err
	}
	logger := promslog.New(f.log)
	if r.exporter != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		l, _, err := report.FetchLedger(ctx, &http.Client{Timeout: exporterTimeout}, r.exporter)
		if err != nil {
			return err
		}
		loc := opts.Location
		if loc == nil {
			loc = time.Local
		}
		if days := ledger.InexactDays(l.Coarsened(), loc); len(days) > 0 {
			logger.Warn("the exporter keeps long threads' oldest days by the hour or day of its own time zone: in this one, these days' spend may be off",
				"days", len(days), "first", days[0], "last", days[len(days)-1])
		}
		entries, later := report.LeaveOutLater(l.Entries(), opts.Now)
		if n := later.Tokens(); n > 0 {
			logger.Warn("usage stamped after now is left out of the report", "tokens", n)
		}
		return printReport(entries, opts, r, logger, stdout)
	}
	if r.ccusageCfg != "" {
		logger.Warn("--config (ccusage's configuration file) is not read: the report's settings come from --config.file")
	}
	cfg, env, err := loadConfig(f.configFile)
	if err != nil {
		return err
	}
	// The thread files are listed while the price table is read: both
	// come before the first file is read, and each takes a core.
	files := listThreadFiles(cfg.Threads.Dirs)
	cc, err := countingFor(cfg, env)
	if err != nil {
		return err
	}
	pricer, repos := cc.pricer, cc.repos
	cachePath := ""
	if r.cacheDir != "" && cfg.AmpServer.Enabled != config.AmpServerOff {
		cachePath = report.CacheFile(r.cacheDir, cfg.AmpServer.URL)
	}
	settings := report.Settings{Prices: pricer.Source + " " + pricer.Version, Overrides: cfg.Pricing.Models,
		Repository: cfg.Labels.Repository, Rules: cfg.Repositories, MaxLabelValues: cfg.Limits.MaxLabelValues}
	cache, err := report.OpenServerCache(cachePath, settings.Fingerprint())
	if err != nil {
		logger.Warn("the Amp server's threads are read anew", "err", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bar := newProgress(stderr)
	ledger, st, err := report.Load(ctx, report.LoadOptions{
		Dirs: cfg.Threads.Dirs, Files: files, MaxFileBytes: int64(cfg.Limits.MaxFileBytes), Workers: r.workers,
		Prices: pricer, Labels: ampstore.NewLabelCap(cfg.Limits.MaxLabelValues, nil), Repositories: repos, Now: opts.Now,
		Cache:    cache,
		Progress: func(done, total int) { bar.show("thread files", done, total) },
		Server: func(ctx context.Context, c *report.ServerCache, owners *ampstore.Owners) error {
			return syncServer(ctx, cfg, env, logger, c, owners, bar, func() int { _, n := c.Threads(); return n })
		},
	})
	bar.done()
	// What was read is kept, even when the sync then failed.
	if serr := cache.Save(cachePath); serr != nil {
		logger.Warn("cannot keep the Amp server's threads for the next report", "err", serr)
	}
	if err != nil {
		return err
	}
	if st.ServerThreads > 0 {
		logger.Debug("Amp server threads", "in_report", st.ServerThreads, "read_now", st.ServerFetched)
	}
	for reason, n := range st.Failed {
		logger.Warn("thread files that could not be read are left out of the report", "reason", reason, "files", n)
	}
	if n := st.Later; n > 0 {
		logger.Warn("items stamped after now are left out of the report", "items", n)
	}
	return printReport(ledger.Entries(), opts, r, logger, stdout)
}

// exporterTimeout bounds `report --exporter`'s request, the whole ledger
// read included.
const exporterTimeout = 5 * time.Minute

// printReport groups the ledger's rows and prints the report.
func printReport(entries []report.Entry, opts report.Options, r reportFlags, logger *slog.Logger, stdout io.Writer) error {
	rep, err := report.Build(entries, opts)
	if err != nil {
		return err
	}
	if n := rep.Undated.Tokens(); n > 0 {
		logger.Warn("usage without any time is in no period (the exporter's counters have it)", "tokens", n)
	}
	if r.json {
		return report.WriteJSON(stdout, rep)
	}
	color := colorOn(stdout)
	if r.colorSet {
		color = r.color
	}
	return report.WriteTable(stdout, rep, report.TableOptions{Color: color, Compact: r.compact, NoCost: !r.cost})
}

// defaultCacheDir is amp-exporter's directory in the user's cache
// directory ($XDG_CACHE_HOME or ~/.cache, ~/Library/Caches, %LocalAppData%),
// "" when there is none.
func defaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "amp-exporter")
}

// colorOn reports whether a table on w is drawn in color: w is a terminal
// and NO_COLOR (no-color.org) is not set to anything.
func colorOn(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// listThreadFiles lists the thread files of dirs (backfill.ThreadFiles)
// in the background; the function it returns waits for the list.
func listThreadFiles(dirs []string) func() ([]string, error) {
	type listed struct {
		files []string
		err   error
	}
	ch := make(chan listed, 1)
	go func() {
		files, err := backfill.ThreadFiles(dirs)
		ch <- listed{files, err}
	}()
	return sync.OnceValues(func() ([]string, error) {
		l := <-ch
		return l.files, l.err
	})
}
