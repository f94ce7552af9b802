package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"

	"github.com/amp-exporter/amp-exporter/backfill"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/app"
	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/source/ampserver"
	"github.com/amp-exporter/amp-exporter/source/workspace"
	"github.com/amp-exporter/amp-exporter/source/workspace/api"
	"github.com/amp-exporter/amp-exporter/state"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// backfillFlags are the flags of `amp-exporter backfill`.
type backfillFlags struct {
	output         string
	labels         []string
	step           time.Duration
	from, until    string
	remoteWriteURL string
	workers        int
}

// addBackfillCommand declares the backfill subcommand.
func addBackfillCommand(app *kingpin.Application, b *backfillFlags) {
	cmd := app.Command("backfill", "Write the history of the counters (from the thread files and the Amp server the configuration names) "+
		"as timestamped OpenMetrics, for `promtool tsdb create-blocks-from openmetrics`, or push it with remote-write. See docs/backfill.md.")
	cmd.Flag("output", "OpenMetrics file to write (- for stdout).").StringVar(&b.output)
	cmd.Flag("label", "Target label NAME=VALUE the scrape adds (repeatable; at least job and instance, as in the Prometheus scrape config).").
		StringsVar(&b.labels)
	cmd.Flag("step", "Time between the samples of a series.").Default("5m").DurationVar(&b.step)
	cmd.Flag("from", "First sample time, RFC 3339 (default: the first usage).").StringVar(&b.from)
	cmd.Flag("until", "Last sample time, RFC 3339 (default: when the live counters of the state under --storage.path began, else now).").
		StringVar(&b.until)
	cmd.Flag("remote-write.url", "Push the samples to this remote-write receiver (it must accept out-of-order samples); "+
		"client settings come from the remote_write entry of the configuration with the same url.").StringVar(&b.remoteWriteURL)
	cmd.Flag("workers", "Thread files parsed at once.").Default(fmt.Sprint(runtime.GOMAXPROCS(0))).IntVar(&b.workers)
}

// runBackfill runs `amp-exporter backfill`.
func runBackfill(f *flags, stdout, stderr io.Writer) int {
	logger := promslog.New(f.log)
	if err := backfillMain(f, stdout, stderr, logger); err != nil {
		fmt.Fprintf(stderr, "amp-exporter backfill: %v\n", err)
		return 1
	}
	return 0
}

func backfillMain(f *flags, stdout, stderr io.Writer, logger *slog.Logger) error {
	b := f.backfill
	if b.output == "" && b.remoteWriteURL == "" {
		return errors.New("nothing to do: give --output FILE or --remote-write.url URL")
	}
	target, err := backfill.ParseLabels(b.labels)
	if err != nil {
		return err
	}
	if !hasLabel(target, "job") || !hasLabel(target, "instance") {
		fmt.Fprintln(stderr, "amp-exporter backfill: warning: no --label job=… and instance=…: the series will not join those the scrape writes")
	}
	var from, until time.Time
	if b.from != "" {
		if from, err = time.Parse(time.RFC3339, b.from); err != nil {
			return fmt.Errorf("--from: %w", err)
		}
	}
	untilFrom := "--until"
	switch {
	case b.until != "":
		if until, err = time.Parse(time.RFC3339, b.until); err != nil {
			return fmt.Errorf("--until: %w", err)
		}
	case f.storagePath != "":
		began, err := state.CountersBegan(f.storagePath)
		if err != nil {
			return fmt.Errorf("--storage.path: %w", err)
		}
		until, untilFrom = began, "the state under --storage.path"
		if until.IsZero() {
			until, untilFrom = time.Now(), "now (the state does not say when its counters began)"
		}
	default:
		until, untilFrom = time.Now(), "now"
	}
	if !from.IsZero() && !from.Before(until) {
		return fmt.Errorf("--from %s is not before --until %s", from.Format(time.RFC3339), until.Format(time.RFC3339))
	}

	cc, err := loadCounting(f.configFile)
	if err != nil {
		return err
	}
	cfg, env, pricer, repos := cc.cfg, cc.env, cc.pricer, cc.repos
	labels := ampstore.NewLabelCap(cfg.Limits.MaxLabelValues, nil)
	bf, err := backfill.New(backfill.Options{
		Until:        until,
		Step:         b.step,
		Prices:       pricer,
		Labels:       labels,
		Repositories: repos,
		Now:          time.Now(),
	})
	if err != nil {
		return fmt.Errorf("--step: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	bar := newProgress(stderr)

	// Local thread files first: a thread both on disk and on the server is
	// the file's, as in the live exporter.
	files, err := backfill.ThreadFiles(cfg.Threads.Dirs)
	if err != nil {
		return err
	}
	owners := ampstore.NewOwners()
	scan, err := backfill.ScanFiles(ctx, bf, files, int64(cfg.Limits.MaxFileBytes), b.workers, owners,
		func(done int) { bar.show("thread files", done, len(files)) })
	bar.done()
	if err != nil {
		return fmt.Errorf("thread files: %w", err)
	}
	for reason, n := range scan.Failed {
		logger.Warn("thread files that could not be read are left out of the history", "reason", reason, "files", n)
	}
	serverThreads := int64(0)
	if err := backfillServer(ctx, cfg, env, logger, bf, owners, bar, &serverThreads); err != nil {
		return err
	}

	wsHistory, wsDays, err := backfillWorkspace(ctx, cfg, labels, until)
	if err != nil {
		return err
	}
	if wsHistory != nil && b.remoteWriteURL != "" {
		logger.Warn("the workspace's history is written to --output only, not pushed with remote-write")
	}

	st := bf.Stats()
	if n := st.Bounded[backfill.BoundBeforeCreated] + st.Bounded[backfill.BoundBeforeAmp] + st.Bounded[backfill.BoundFuture]; n > 0 {
		logger.Warn("items with times their thread cannot hold were counted at a bounded time", "items", n,
			backfill.BoundBeforeCreated, st.Bounded[backfill.BoundBeforeCreated],
			backfill.BoundBeforeAmp, st.Bounded[backfill.BoundBeforeAmp],
			backfill.BoundFuture, st.Bounded[backfill.BoundFuture])
	}
	times := bf.Range(from)
	if wsFirst := wsHistory.First(); from.IsZero() && !wsFirst.IsZero() && wsFirst.UnixMilli() < times[0] {
		times = bf.Range(wsFirst)
	}
	series := bf.Series(times)
	wsSeries := wsHistory.Series(times)
	first, last := time.UnixMilli(times[0]).UTC(), time.UnixMilli(times[len(times)-1]).UTC()
	// Said before the writing starts: a range far longer than expected
	// shows here, not after gigabytes.
	fmt.Fprintf(stderr, "history: %s to %s (%s), %d series, %d samples\n", first.Format(time.RFC3339), last.Format(time.RFC3339),
		days(last.Sub(first)), len(series)+len(wsSeries), backfill.Samples(series)+backfill.WorkspaceSamples(wsSeries))
	var samples int64
	if b.output != "" {
		samples, err = writeOutput(b.output, stdout, series, wsSeries, target)
		if err != nil {
			return err
		}
	}
	if b.remoteWriteURL != "" {
		n, err := pushBackfill(ctx, cfg, b.remoteWriteURL, series, target, bar)
		bar.done()
		if err != nil {
			return err
		}
		samples = max(samples, n)
	}
	fmt.Fprintf(stderr, "backfilled %d series, %d samples, %s to %s (until: %s) from %d thread files, %d server threads and %d member-days of the workspace's rollup (%d items; %d later items left to the live counters) in %s\n",
		len(series)+len(wsSeries), samples, first.Format(time.RFC3339), last.Format(time.RFC3339), untilFrom,
		scan.Files-scan.Duplicates, serverThreads, wsDays, st.Items, st.Later, time.Since(began).Round(time.Millisecond))
	if b.output != "" && b.output != "-" {
		fmt.Fprintf(stderr, "next: %s DATA_DIR  (DATA_DIR: Prometheus's --storage.tsdb.path; keep --storage.tsdb.retention.time longer than %dd)\n",
			promtoolCommand(b.output), int(time.Since(first).Hours()/24)+1)
	}
	return nil
}

// promtoolBlockDuration is the --max-block-duration the printed promtool
// command asks for: more than promtool's largest block (39,366 h, 2 h x
// 3^9, about 4.5 years), so the whole history is one block (the blocks are
// aligned to multiples of it since 1970: 2023-11-22 to 2028-05-19 is one).
// promtool reads the whole file once per block: with its default 2-hour
// blocks a year of history is 4,380 passes over the file, hours of work.
const promtoolBlockDuration = "43800h"

// promtoolCommand is the command that turns the file into blocks.
func promtoolCommand(file string) string {
	return "promtool tsdb create-blocks-from openmetrics --max-block-duration=" + promtoolBlockDuration + " " + shellQuote(file)
}

// shellQuote quotes s for a POSIX shell when it needs it, so that the
// printed command can be pasted as it is.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// days says a duration in days.
func days(d time.Duration) string {
	return fmt.Sprintf("%.1f days", d.Hours()/24)
}

func hasLabel(ls []backfill.Label, name string) bool {
	for _, l := range ls {
		if l.Name == name {
			return true
		}
	}
	return false
}

// backfillServer replays the Amp server's threads, when the configuration
// turns that source on (as the live exporter decides it).
func backfillServer(ctx context.Context, cfg *config.Config, env config.Env, logger *slog.Logger,
	bf *backfill.Backfill, owners *ampstore.Owners, bar *progress, n *int64) error {
	rec := &backfill.ServerStore{B: bf}
	err := syncServer(ctx, cfg, env, logger, rec, owners, bar, func() int { return int(rec.Threads.Load()) })
	*n = rec.Threads.Load()
	if err != nil {
		return err
	}
	if err := rec.FirstErr(); err != nil {
		return fmt.Errorf("amp_server: %w", err)
	}
	return nil
}

// backfillWorkspace reads the workspace's daily rollup, when the
// configuration turns the workspace source on, over the days the live
// source reads on its first run (history_days up to until's day, in
// chunks of workspace.MaxChunkDays), and counts it as that source does.
// It returns nil when the source is off, and how many member-days were
// read.
func backfillWorkspace(ctx context.Context, cfg *config.Config, labels *ampstore.LabelCap, until time.Time) (*backfill.WorkspaceHistory, int, error) {
	w := cfg.Workspace
	if !w.Enabled {
		return nil, 0, nil
	}
	opts := api.OptionsFrom(w)
	opts.Version = version.Version
	opts.Clock = clock.Real{}
	client, err := api.New(opts)
	if err != nil {
		return nil, 0, fmt.Errorf("amp_workspace: %w", err)
	}
	today := until.UTC().Truncate(24 * time.Hour)
	first := today.AddDate(0, 0, -(max(w.HistoryDays, 1) - 1))
	var days []ampstore.WorkspaceDay
	emails := map[string]string{}
	for end := today; !end.Before(first); end = end.AddDate(0, 0, -workspace.MaxChunkDays) {
		start := end.AddDate(0, 0, -(workspace.MaxChunkDays - 1))
		if start.Before(first) {
			start = first
		}
		du, err := client.DailyUsage(ctx, end.Format(time.DateOnly), int(end.Sub(start)/(24*time.Hour))+1)
		if err != nil {
			return nil, 0, fmt.Errorf("amp_workspace: daily-usage: %w", err)
		}
		// A window a day longer than asked must not count a day twice.
		lo, hi := start.Format(time.DateOnly), end.Format(time.DateOnly)
		for _, d := range du.Days {
			if d.Date < lo || d.Date > hi {
				continue
			}
			for _, u := range d.Users {
				if u.Email != "" {
					emails[u.UserID] = u.Email
				}
				days = append(days, workspace.DayOf(d.Date, u))
			}
		}
	}
	h, err := backfill.NewWorkspaceHistory(days, emails, w.UserLabel, labels, until)
	if err != nil {
		return nil, 0, fmt.Errorf("amp_workspace: %w", err)
	}
	return h, len(days), nil
}

// syncServer reads the Amp server's threads into rec once (every listed
// thread rec does not have at its listed version), when the configuration
// turns that source on (as the live exporter decides it); done tells the
// progress line how many were read.
func syncServer(ctx context.Context, cfg *config.Config, env config.Env, logger *slog.Logger,
	rec ampserver.Store, owners *ampstore.Owners, bar *progress, done func() int) error {
	a := cfg.AmpServer
	if a.Enabled == config.AmpServerOff {
		return nil
	}
	key, err := ampserver.FindKey(a.APIKeyFile, a.URL, ampserver.KeyEnv{Getenv: env.Getenv, Home: env.Home})
	if err != nil {
		if errors.Is(err, ampserver.ErrNoKey) && a.Enabled == config.AmpServerAuto {
			return nil
		}
		return fmt.Errorf("amp_server: %w", err)
	}
	client, err := ampserver.NewClient(ampserver.Options{
		URL:              a.URL,
		Key:              key.Read,
		HTTP:             a.HTTPClient,
		Version:          version.Version,
		MaxResponseBytes: int64(cfg.Limits.MaxFileBytes) + 1<<20,
	})
	if err != nil {
		return fmt.Errorf("amp_server: %w", err)
	}
	sopts := ampserver.SyncOptions{Owners: owners, Logger: logger}
	// A store kept per account (the report's cache) is told whose
	// threads the sync reads before it consults them.
	if ac, ok := rec.(interface{ UseAccount(string) }); ok {
		sopts.OnAccount = func(u ampserver.UserInfo) { ac.UseAccount(accountID(u)) }
	}
	syncer := ampserver.NewSyncer(client, ampserver.SyncConfig{
		IncludeArchived: a.IncludeArchived,
		InstallationID:  a.InstallationID,
		MaxConcurrency:  a.MaxConcurrency,
		MaxThreadBytes:  int64(cfg.Limits.MaxFileBytes),
	}, rec, sopts)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				bar.show("server threads", done(), 0)
			}
		}
	}()
	stats, err := syncer.Sync(ctx)
	close(stop)
	bar.done()
	if err != nil {
		return fmt.Errorf("amp_server: %w", err)
	}
	logger.Debug("server threads read", "stats", fmt.Sprintf("%+v", stats))
	return nil
}

// accountID names the account: its id, or its e-mail when the server
// gives no id (hashed by the cache, never written as it is).
func accountID(u ampserver.UserInfo) string {
	if u.ID != "" {
		return "id:" + u.ID
	}
	return "email:" + u.Email
}

// writeOutput writes the OpenMetrics file (atomically: a temporary file
// renamed over it) or stdout. A path that is not a regular file (/dev/null,
// a named pipe a loader reads) is written in place: renaming over it would
// replace the device or pipe with a file.
//
// The temporary file gets a fresh random name in the target's directory and
// is created exclusively (os.CreateTemp: O_CREATE|O_EXCL), so a link planted
// at a predictable name (FILE.tmp) cannot redirect the write to another file:
// a backfill run as root would truncate the link's target. An --output that
// is itself a symlink is written through: the temporary file goes beside its
// target and is renamed over the target, so the link stays a link.
func writeOutput(path string, stdout io.Writer, series []backfill.Series, ws []backfill.WorkspaceSeries, target []backfill.Label) (int64, error) {
	if path == "-" {
		return backfill.WriteOpenMetrics(stdout, series, target, ws...)
	}
	var f *os.File
	var err error
	dest := path // what the temporary file is renamed to
	if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return 0, fmt.Errorf("--output %s: a directory", path)
		}
		f, err = os.OpenFile(path, os.O_WRONLY, 0)
		dest = ""
	} else {
		if dest, err = filepath.EvalSymlinks(path); errors.Is(err, os.ErrNotExist) {
			dest, err = linkTarget(path)
		}
		if err == nil {
			f, err = os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*.tmp")
		}
	}
	if err != nil {
		return 0, fmt.Errorf("--output: %w", err)
	}
	n, err := backfill.WriteOpenMetrics(f, series, target, ws...)
	if err == nil && dest != "" {
		// CreateTemp makes the file 0600; the history is no secret of the
		// user's, and promtool or Prometheus may run as another user.
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && dest != "" {
		err = os.Rename(f.Name(), dest)
	}
	if err != nil {
		if dest != "" {
			os.Remove(f.Name())
		}
		return 0, fmt.Errorf("--output: %w", err)
	}
	return n, nil
}

// linkTarget is where a path that does not exist yet will be written: the
// path itself, or, when it is a symlink whose target does not exist (a
// dangling link), that target (followed through further links).
func linkTarget(path string) (string, error) {
	for range 40 { // as the kernel's limit on links in a path
		fi, err := os.Lstat(path)
		if errors.Is(err, os.ErrNotExist) || (err == nil && fi.Mode()&os.ModeSymlink == 0) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", fmt.Errorf("%s: too many links", path)
}

// pushBackfill sends the series to a remote-write receiver, with the
// client settings of the configuration's remote_write entry for that url.
func pushBackfill(ctx context.Context, cfg *config.Config, url string, series []backfill.Series,
	target []backfill.Label, bar *progress) (int64, error) {
	hc := commoncfg.DefaultHTTPClientConfig
	timeout := 30 * time.Second
	for _, rw := range cfg.RemoteWrite {
		if string(rw.URL) == url {
			hc = rw.HTTPClientConfig
			if rw.Timeout > 0 {
				timeout = time.Duration(rw.Timeout)
			}
		}
	}
	client, err := commoncfg.NewClientFromConfig(hc, "remote_write", commoncfg.WithUserAgent(app.UserAgent()))
	if err != nil {
		return 0, fmt.Errorf("--remote-write.url: %w", err)
	}
	client.Timeout = timeout
	return backfill.Push(ctx, backfill.PushOptions{
		URL: url, Client: client, UserAgent: app.UserAgent(),
		Progress: func(done, total int) { bar.show("remote-write", done, total) },
	}, series, target)
}

// progress draws a progress line on stderr when it is a terminal.
type progress struct {
	mu    sync.Mutex
	last  time.Time
	w     io.Writer
	on    bool
	shown bool
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

// show draws what: done of total (total 0: unknown).
func (p *progress) show(what string, done, total int) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := time.Now(); now.Sub(p.last) < 100*time.Millisecond && done != total {
		return
	} else {
		p.last = now
	}
	p.shown = true
	if total <= 0 {
		fmt.Fprintf(p.w, "\r%s: %d", what, done)
		return
	}
	const width = 30
	n := done * width / total
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d", what, strings.Repeat("#", n), strings.Repeat(" ", width-n), done, total)
}

// done ends the progress line.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on && p.shown {
		fmt.Fprintln(p.w)
		p.shown = false
	}
}
