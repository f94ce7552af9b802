// Package threads watches directories of Amp thread files and applies every
// new version of a thread to the thread store (the collector renders the
// store; nothing here talks to it).
//
// A thread file is a document the Amp CLI rewrites whole (write to
// .amptmp, rename over) about every 100 ms while the agent streams. The
// watcher treats inotify (through fsnotify) as a latency shortcut only:
// events mark files dirty and a short coalescing delay batches the bursts;
// a periodic full rescan always runs; and an inotify overflow, a watcher
// error or a watch that cannot be added (inotify limits, NFS) switches the
// watcher to polling, with one warning and a counter. An unchanged file is
// recognised from stat alone (size, mtime, ctime, inode) and never re-read.
//
// A file that cannot be read is read again with a growing delay until it is
// read or changes; a file that does not parse is counted as broken only
// once it has stayed unchanged for a settle period (it may still be being
// written). A symbolic link to a regular file is a thread file, on an event
// and in a rescan alike.
package threads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/fileid"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// Store is where parsed threads go (store.ThreadStore).
type Store interface {
	File(path string) (store.FileRecord, bool)
	FilesUnder(dir string) []string
	FileDirs() []string
	Apply(path string, v store.FileVersion, sum *thread.Summary) bool
	Remove(path string)
}

// Metrics receives the watcher's own events (the collector's ExporterMetrics).
type Metrics interface {
	ParseFailed(source, reason string)
	Parsed(source string, d time.Duration)
	WatcherFellBack(reason string)
	WatcherPolling(on bool)
	DirsMissing(n int)
}

// Config is what the watcher reads from the exporter's configuration; it
// can change on reload.
type Config struct {
	Dirs           []string
	ResyncInterval time.Duration // full rescan, always
	PollInterval   time.Duration // rescan while polling or while a directory is missing
	MaxFileBytes   int64
}

// Options are the watcher's fixed dependencies.
type Options struct {
	Logger  *slog.Logger
	Clock   clock.Clock
	Workers int
	// Coalesce is how long events for a file are gathered before it is
	// parsed; the CLI rewrites a streaming thread every ~100 ms.
	Coalesce time.Duration
	// RetryDelay is how long a file that could not be read (open or read
	// failed) waits before it is read again; the delay doubles on each
	// failure of the same version, up to MaxRetryDelay. Only a second
	// failure counts, once per version.
	RetryDelay time.Duration
	// OnFirstScan is called once the first full scan of every directory is
	// done (readiness).
	OnFirstScan func()
	// Trace, when set, is told what the loop just did (tests synchronize on
	// it).
	Trace func(event string)
	// MaxRetryDelay caps the growing delay between reads of a file that
	// cannot be read.
	MaxRetryDelay time.Duration
	// Settle is how long a version that does not parse must stay unchanged
	// before it counts as broken.
	Settle time.Duration
	// addWatch replaces fsnotify's Add (tests inject failures).
	addWatch func(w *fsnotify.Watcher, dir string) error
	// open replaces os.Open (tests inject failures).
	open func(path string) (io.ReadCloser, error)
}

// Watcher follows the thread directories.
type Watcher struct {
	cfg     Config
	opts    Options
	store   Store
	metrics Metrics
	log     *slog.Logger

	reconfig chan Config

	fsw      *fsnotify.Watcher
	polling  bool
	watched  map[string]bool // directories with an inotify watch
	missing  map[string]bool // configured directories that do not exist
	dirty    map[string]bool
	failed   map[string]failure     // versions counted as failed: not read again
	retrying map[string]*retryState // versions that failed and will be read again
	parsers  chan *thread.Parser

	coalesce   clock.Timer
	coalescing bool
	retry      clock.Timer
	retryAt    time.Time // when retry fires; zero when it is stopped
}

// retryState is a file version that failed and is read again later: one
// that could not be read is retried with a growing delay until it is read
// or changes; one that did not parse is read again once it has stayed
// unchanged for the settle period, and only then counted as broken.
type retryState struct {
	version  store.FileVersion
	reason   string
	since    time.Time // when this version first failed
	due      time.Time // when to read it again
	attempts int       // failed reads of this version
	counted  bool      // its error was counted
}

// New returns a watcher; Run starts it.
func New(cfg Config, opts Options, store Store, metrics Metrics) *Watcher {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.Coalesce <= 0 {
		opts.Coalesce = 100 * time.Millisecond
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = 500 * time.Millisecond
	}
	if opts.MaxRetryDelay < opts.RetryDelay {
		opts.MaxRetryDelay = max(opts.RetryDelay, time.Minute)
	}
	if opts.Settle <= 0 {
		opts.Settle = 2 * time.Second
	}
	if opts.Trace == nil {
		opts.Trace = func(string) {}
	}
	if opts.open == nil {
		opts.open = func(path string) (io.ReadCloser, error) { return os.Open(path) }
	}
	if opts.addWatch == nil {
		opts.addWatch = func(w *fsnotify.Watcher, dir string) error { return w.Add(dir) }
	}
	w := &Watcher{
		cfg:      cfg,
		opts:     opts,
		store:    store,
		metrics:  metrics,
		log:      opts.Logger,
		reconfig: make(chan Config),
		watched:  map[string]bool{},
		missing:  map[string]bool{},
		dirty:    map[string]bool{},
		failed:   map[string]failure{},
		retrying: map[string]*retryState{},
		parsers:  make(chan *thread.Parser, opts.Workers),
	}
	for i := 0; i < opts.Workers; i++ {
		w.parsers <- thread.NewParser()
	}
	return w
}

// Reconfigure hands the running watcher a new configuration; it blocks until
// the loop has taken it, or ctx ends.
func (w *Watcher) Reconfigure(ctx context.Context, cfg Config) {
	select {
	case w.reconfig <- cfg:
	case <-ctx.Done():
	}
}

// Run watches until ctx is cancelled.
func (w *Watcher) Run(ctx context.Context) error {
	clk := w.opts.Clock
	w.coalesce = clk.NewTimer(time.Hour)
	w.coalesce.Stop()
	w.retry = clk.NewTimer(time.Hour)
	w.retry.Stop()

	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		w.fallBack(store.FallbackAddFailed, err)
	} else {
		w.fsw = fsw
		defer func() {
			if w.fsw != nil {
				w.fsw.Close()
			}
		}()
	}
	w.syncWatches()
	start := clk.Now()
	w.forgetUnconfigured()
	w.scanAll(ctx)
	w.log.Info("first scan done", "dirs", len(w.cfg.Dirs), "missing_dirs", len(w.missing),
		"duration", clk.Now().Sub(start).Round(time.Millisecond))
	if w.opts.OnFirstScan != nil {
		w.opts.OnFirstScan()
	}
	w.opts.Trace("ready")

	resync := clk.NewTicker(w.cfg.ResyncInterval)
	defer resync.Stop()
	poll := clk.NewTicker(w.cfg.PollInterval)
	defer poll.Stop()

	for {
		var events <-chan fsnotify.Event
		var errs <-chan error
		if w.fsw != nil {
			events, errs = w.fsw.Events, w.fsw.Errors
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				w.fallBack(store.FallbackWatchError, errors.New("event channel closed"))
				continue
			}
			w.handleEvent(ev)
		case err, ok := <-errs:
			if !ok {
				err = errors.New("error channel closed")
			}
			reason := store.FallbackWatchError
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				reason = store.FallbackOverflow
			}
			w.fallBack(reason, err)
			w.scanAll(ctx)
		case <-w.coalesce.C():
			w.coalescing = false
			w.flush(ctx)
		case <-w.retry.C():
			w.retryAt = time.Time{}
			now := clk.Now()
			for p, ps := range w.retrying {
				if !now.Before(ps.due) {
					w.dirty[p] = true
				}
			}
			w.flush(ctx)
			w.armRetry()
		case <-resync.C():
			w.syncWatches()
			w.scanAll(ctx)
		case <-poll.C():
			if w.polling || len(w.missing) > 0 {
				w.syncWatches()
				w.scanAll(ctx)
			}
		case cfg := <-w.reconfig:
			w.applyConfig(ctx, cfg)
			resync.Stop()
			poll.Stop()
			resync = clk.NewTicker(w.cfg.ResyncInterval)
			poll = clk.NewTicker(w.cfg.PollInterval)
		}
	}
}

func (w *Watcher) applyConfig(ctx context.Context, cfg Config) {
	keep := map[string]bool{}
	for _, d := range cfg.Dirs {
		keep[d] = true
	}
	for _, d := range w.cfg.Dirs {
		if keep[d] {
			continue
		}
		if w.watched[d] && w.fsw != nil {
			_ = w.fsw.Remove(d)
		}
		delete(w.watched, d)
		delete(w.missing, d)
		w.forgetDir(d)
	}
	if cfg.MaxFileBytes > w.cfg.MaxFileBytes {
		// Files the old limit refused are read again if the new one
		// admits them; those still too large are not counted twice.
		for p, f := range w.failed {
			if f.reason == thread.ReasonTooLarge && f.version.Size <= cfg.MaxFileBytes {
				delete(w.failed, p)
			}
		}
	}
	w.cfg = cfg
	w.forgetUnconfigured()
	for _, ps := range w.retrying {
		ps.due = time.Time{} // a reload reads failed files again at once
	}
	w.syncWatches()
	w.scanAll(ctx)
	w.opts.Trace("reconfigured")
}

// fallBack switches from inotify to polling for good (until restart): once
// inotify has lost events or refused a watch, it cannot be trusted here.
func (w *Watcher) fallBack(reason string, err error) {
	w.metrics.WatcherFellBack(reason)
	if !w.polling {
		w.log.Warn("thread watcher falls back to polling",
			"reason", reason, "poll_interval", w.cfg.PollInterval, "err", err)
	}
	w.polling = true
	w.metrics.WatcherPolling(true)
	if w.fsw != nil {
		w.fsw.Close()
		w.fsw = nil
	}
	w.watched = map[string]bool{}
	w.opts.Trace("fallback " + reason)
}

// syncWatches adds watches to configured directories that exist and lack
// one, and notes which directories are missing.
func (w *Watcher) syncWatches() {
	for _, dir := range w.cfg.Dirs {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			if !w.missing[dir] {
				w.log.Warn("thread directory is missing; polling for it", "dir", dir, "err", err)
				w.missing[dir] = true
			}
			delete(w.watched, dir)
			continue
		}
		if w.missing[dir] {
			w.log.Info("thread directory appeared", "dir", dir)
			delete(w.missing, dir)
		}
		if w.polling || w.fsw == nil || w.watched[dir] {
			continue
		}
		if err := w.opts.addWatch(w.fsw, dir); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				w.missing[dir] = true
				continue
			}
			w.fallBack(store.FallbackAddFailed, fmt.Errorf("watch %q: %w", dir, err))
			return
		}
		w.watched[dir] = true
	}
	w.metrics.DirsMissing(len(w.missing))
	w.metrics.WatcherPolling(w.polling)
}

func (w *Watcher) handleEvent(ev fsnotify.Event) {
	if ev.Op == fsnotify.Chmod {
		// Attribute changes are ignored, except for a file that could not
		// be read: a chmod may have just made it readable.
		ps, ok := w.retrying[ev.Name]
		if !ok || ps.reason != thread.ReasonRead {
			return
		}
		ps.due = time.Time{}
	}
	for _, dir := range w.cfg.Dirs {
		if ev.Name == dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
			// The directory itself went away (or was moved: inotify would
			// follow it). Forget its files now; polling brings it back.
			if w.fsw != nil {
				_ = w.fsw.Remove(dir)
			}
			delete(w.watched, dir)
			w.missing[dir] = true
			w.forgetDir(dir)
			w.metrics.DirsMissing(len(w.missing))
			w.log.Warn("thread directory removed; polling for it", "dir", dir)
			w.opts.Trace("dir gone " + dir)
			return
		}
	}
	if !isThreadFile(filepath.Base(ev.Name)) || !w.configured(filepath.Dir(ev.Name)) {
		return
	}
	w.dirty[ev.Name] = true
	if !w.coalescing {
		w.coalescing = true
		w.coalesce.Reset(w.opts.Coalesce)
	}
	w.opts.Trace("dirty " + ev.Name)
}

func (w *Watcher) configured(dir string) bool {
	for _, d := range w.cfg.Dirs {
		if d == dir {
			return true
		}
	}
	return false
}

// isThreadFile reports whether a directory entry can be a thread: *.json,
// and not the CLI's *.json.amptmp temporaries (which end differently anyway).
func isThreadFile(name string) bool {
	return strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".")
}

func (w *Watcher) forget(path string) {
	w.store.Remove(path)
	delete(w.failed, path)
	delete(w.retrying, path)
}

// forgetDir forgets every file of dir: those present in the store and those
// still waiting to be parsed or read again, so that nothing of a directory
// that left the configuration (or the disk) comes back later.
func (w *Watcher) forgetDir(dir string) {
	for _, p := range w.store.FilesUnder(dir) {
		w.forget(p)
	}
	deleteUnder(w.dirty, dir)
	deleteUnder(w.failed, dir)
	deleteUnder(w.retrying, dir)
}

// deleteUnder deletes the entries of m for files directly in dir.
func deleteUnder[V any](m map[string]V, dir string) {
	for p := range m {
		if filepath.Dir(p) == dir {
			delete(m, p)
		}
	}
}

// forgetUnconfigured forgets the present files of directories that are not
// configured: after a state restored from a run with other threads.dirs,
// they would otherwise stay in amp_threads for good. Their contributions
// stay counted.
func (w *Watcher) forgetUnconfigured() {
	for _, d := range w.store.FileDirs() {
		if !w.configured(d) {
			w.forgetDir(d)
		}
	}
}

// flush parses the dirty files.
func (w *Watcher) flush(ctx context.Context) {
	paths := make([]string, 0, len(w.dirty))
	for p := range w.dirty {
		paths = append(paths, p)
	}
	clear(w.dirty)
	sort.Strings(paths)
	var jobs []job
	for _, p := range paths {
		if !w.configured(filepath.Dir(p)) {
			continue // its directory left the configuration meanwhile
		}
		fi, err := os.Stat(p) // follows a symbolic link, as scanAll does
		if err != nil || !fi.Mode().IsRegular() {
			w.forget(p) // a no-op for a file never seen
			continue
		}
		if j, ok := w.jobFor(p, fi); ok {
			jobs = append(jobs, j)
		}
	}
	w.run(ctx, jobs)
	w.opts.Trace("flushed")
}

// scanAll lists every directory, parses new and changed files and forgets
// vanished ones.
func (w *Watcher) scanAll(ctx context.Context) {
	var jobs []job
	for _, dir := range w.cfg.Dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !w.missing[dir] {
				w.log.Warn("cannot list thread directory", "dir", dir, "err", err)
				w.missing[dir] = true
				w.metrics.DirsMissing(len(w.missing))
			}
			w.forgetDir(dir)
			continue
		}
		present := map[string]bool{}
		for _, e := range entries {
			if !isThreadFile(e.Name()) {
				continue
			}
			p := filepath.Join(dir, e.Name())
			fi, ok := threadFileInfo(p, e)
			if !ok {
				continue
			}
			present[p] = true
			if j, ok := w.jobFor(p, fi); ok {
				jobs = append(jobs, j)
			}
		}
		for _, p := range w.store.FilesUnder(dir) {
			if !present[p] {
				w.forget(p)
			}
		}
		for p := range w.failed {
			if filepath.Dir(p) == dir && !present[p] {
				delete(w.failed, p)
			}
		}
	}
	w.run(ctx, jobs)
	w.opts.Trace("scanned")
}

// threadFileInfo returns the stat of a directory entry that can hold a
// thread: a regular file, or a symbolic link to one, followed wherever it
// points (the same as an inotify event's os.Stat). Anything else — a link
// to nothing or to a directory, a socket — is not a thread file.
func threadFileInfo(path string, e fs.DirEntry) (fs.FileInfo, bool) {
	var fi fs.FileInfo
	var err error
	switch {
	case e.Type().IsRegular():
		fi, err = e.Info()
	case e.Type()&fs.ModeSymlink != 0:
		fi, err = os.Stat(path)
	default:
		return nil, false
	}
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false // removed since the listing, dangling, or not a file
	}
	return fi, true
}

// failure is a file version counted as failed, and why.
type failure struct {
	version store.FileVersion
	reason  string
}

type job struct {
	path    string
	version store.FileVersion
	size    int64
}

type result struct {
	job
	err      error
	tooLarge bool
}

// jobFor decides from stat alone whether a file needs reading.
func (w *Watcher) jobFor(path string, fi fs.FileInfo) (job, bool) {
	v := versionOf(fi)
	if rec, ok := w.store.File(path); ok && rec.Version == v {
		return job{}, false
	}
	if f, ok := w.failed[path]; ok && f.version == v {
		return job{}, false
	}
	if ps, ok := w.retrying[path]; ok && ps.version == v && w.opts.Clock.Now().Before(ps.due) {
		return job{}, false // read again when due
	}
	return job{path: path, version: v, size: fi.Size()}, true
}

func versionOf(fi fs.FileInfo) store.FileVersion {
	id := fileid.Of(fi)
	return store.FileVersion{Size: fi.Size(), ModNanos: fi.ModTime().UnixNano(), Inode: id.Inode, CtimeNs: id.CtimeNs}
}

// run parses jobs on the worker pool and applies the outcomes.
func (w *Watcher) run(ctx context.Context, jobs []job) {
	if len(jobs) == 0 {
		return
	}
	results := make([]result, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for i := 0; i < w.opts.Workers && i < len(jobs); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := <-w.parsers
			defer func() { w.parsers <- p }()
			for i := range next {
				results[i] = w.parseOne(p, jobs[i])
			}
		}()
	}
	// Largest first: a big file started last would leave one worker alone
	// at the end of the first scan.
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return jobs[order[a]].size > jobs[order[b]].size })
	for _, i := range order {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for _, r := range results {
		if r.path == "" { // not run: shutting down
			continue
		}
		w.settle(r)
	}
	w.armRetry()
}

// parseOne reads and parses one file and, on success, applies it to the
// store. It runs on a worker.
func (w *Watcher) parseOne(p *thread.Parser, j job) result {
	r := result{job: j}
	if j.size > w.cfg.MaxFileBytes {
		r.tooLarge = true
		return r
	}
	start := w.opts.Clock.Now()
	f, err := w.opts.open(j.path)
	if err != nil {
		r.err = err
		return r
	}
	defer f.Close()
	t, err := parseFile(p, f, w.cfg.MaxFileBytes)
	if err != nil {
		r.err = err
		return r
	}
	w.store.Apply(j.path, j.version, thread.SummarizeItems(t))
	w.metrics.Parsed(store.SourceThreads, w.opts.Clock.Now().Sub(start))
	return r
}

// settle records a job's outcome in the loop. A success clears the failure
// state. A file that could not be read is read again with a growing delay
// until it is read or changes; its error counts once. A file that does not
// parse may still be being written: it is read again once it has stayed
// unchanged for the settle period, and counted as broken only if it still
// does not parse then. Other failures (too large, not a thread) count at
// once, and the same version is not read again.
func (w *Watcher) settle(r result) {
	if r.err == nil && !r.tooLarge {
		if ps := w.retrying[r.path]; ps != nil && ps.counted {
			w.log.Info("thread file read after failing", "path", r.path, "reason", ps.reason, "attempts", ps.attempts)
		}
		delete(w.failed, r.path)
		delete(w.retrying, r.path)
		return
	}
	if errors.Is(r.err, fs.ErrNotExist) {
		w.forget(r.path)
		return
	}
	reason := thread.ReasonTooLarge
	if !r.tooLarge {
		reason = thread.Reason(r.err)
	}
	now := w.opts.Clock.Now()
	ps := w.retrying[r.path]
	if ps == nil || ps.version != r.version {
		ps = &retryState{version: r.version, since: now}
	}
	ps.reason = reason
	ps.attempts++
	switch reason {
	case thread.ReasonRead:
		ps.due = now.Add(w.backoff(ps.attempts))
		w.retrying[r.path] = ps
		if ps.attempts >= 2 && !ps.counted {
			ps.counted = true
			w.countFailure(r, reason, "retry_in", ps.due.Sub(now))
		}
		w.opts.Trace("retry " + r.path)
		return
	case thread.ReasonTruncated, thread.ReasonSyntax:
		if now.Sub(ps.since) < w.opts.Settle {
			ps.due = ps.since.Add(w.opts.Settle)
			w.retrying[r.path] = ps
			w.opts.Trace("retry " + r.path)
			return
		}
	}
	delete(w.retrying, r.path)
	w.failed[r.path] = failure{version: r.version, reason: reason}
	w.countFailure(r, reason)
	w.opts.Trace("failed " + r.path)
}

// backoff is the delay before the next read of a version that failed to be
// read attempts times.
func (w *Watcher) backoff(attempts int) time.Duration {
	d := w.opts.RetryDelay
	for i := 1; i < attempts && d < w.opts.MaxRetryDelay; i++ {
		d *= 2
	}
	return min(d, w.opts.MaxRetryDelay)
}

// armRetry sets the retry timer to the earliest due read again.
func (w *Watcher) armRetry() {
	var next time.Time
	found := false
	for _, ps := range w.retrying {
		if !found || ps.due.Before(next) {
			next, found = ps.due, true
		}
	}
	now := w.opts.Clock.Now()
	next = later(next, now)
	switch {
	case !found:
		if !w.retryAt.IsZero() {
			w.retry.Stop()
			w.retryAt = time.Time{}
		}
	case !next.Equal(w.retryAt):
		w.retry.Stop()
		w.retry.Reset(next.Sub(now))
		w.retryAt = next
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// countFailure counts a failed file version and logs it once.
func (w *Watcher) countFailure(r result, reason string, extra ...any) {
	w.metrics.ParseFailed(store.SourceThreads, reason)
	_, kept := w.store.File(r.path)
	attrs := []any{"path", r.path, "reason", reason, "kept_last_good", kept}
	switch {
	case r.tooLarge:
		attrs = append(attrs, "size_bytes", r.size, "max_file_bytes", w.cfg.MaxFileBytes)
	default:
		attrs = append(attrs, "err", r.err)
	}
	attrs = append(attrs, extra...)
	switch {
	case reason == thread.ReasonNotThread:
		// Stray JSON (settings.json) is expected in the directory.
		w.log.Debug("skipping file that is not an Amp thread", attrs...)
	case reason == thread.ReasonRead:
		w.log.Warn("cannot read thread file; retrying", attrs...)
	default:
		w.log.Warn("cannot parse thread file", attrs...)
	}
}
