package streams

import (
	"bufio"
	"context"
	"errors"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/fileid"
	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/store"
)

// Store is where stream-json lines are counted (store.StreamStore).
type Store interface {
	File(path string) (store.StreamFile, bool)
	Files() []string
	ApplyFile(path string, f store.StreamFile, incs []streamjson.Increments)
	ForgetFile(path string)
	Apply(incs []streamjson.Increments)
}

// Metrics receives parse errors (collector.ExporterMetrics).
type Metrics interface {
	ParseFailed(source, reason string)
}

// TailConfig is the tailer's part of the configuration.
type TailConfig struct {
	Dirs         []string
	PollInterval time.Duration
	MaxLineBytes int
}

// Tailer follows directories of *.jsonl captures by polling: a capture is
// a log (appended to), so its size says whether there is anything new, and
// polling needs no inotify. Every complete line is counted once; the offset
// of the next line is stored with the counters.
type Tailer struct {
	cfg      TailConfig
	store    Store
	metrics  Metrics
	log      *slog.Logger
	clock    clock.Clock
	parser   *streamjson.Parser
	reconfig chan TailConfig
	// Trace, when set, is told when a poll is done (tests synchronize on it).
	Trace func()
	// OnFirstPass, when set, is called once Run's first poll has read every
	// capture present to its end: the stream-json totals are complete.
	OnFirstPass func()
	// seen is the stat of each capture when it was last read to its end,
	// so that a poll opens only captures that changed.
	seen map[string]fs.FileInfo
	// open replaces os.Open (tests count the opens).
	open func(path string) (*os.File, error)
}

// NewTailer returns a tailer; Run starts it.
func NewTailer(cfg TailConfig, store Store, metrics Metrics, log *slog.Logger, clk clock.Clock) *Tailer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &Tailer{cfg: cfg, store: store, metrics: metrics, log: log, clock: clk,
		parser: streamjson.NewParser(), reconfig: make(chan TailConfig), Trace: func() {},
		seen: map[string]fs.FileInfo{}, open: os.Open}
}

// Reconfigure hands the running tailer a new configuration.
func (t *Tailer) Reconfigure(ctx context.Context, cfg TailConfig) {
	select {
	case t.reconfig <- cfg:
	case <-ctx.Done():
	}
}

// Run polls until ctx ends.
func (t *Tailer) Run(ctx context.Context) error {
	tick := t.clock.NewTicker(t.cfg.PollInterval)
	defer func() { tick.Stop() }()
	t.Poll()
	if t.OnFirstPass != nil {
		t.OnFirstPass()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
			t.Poll()
		case cfg := <-t.reconfig:
			t.cfg = cfg
			tick.Stop()
			tick = t.clock.NewTicker(cfg.PollInterval)
			t.Poll()
		}
	}
}

// Poll reads what was appended to every capture since the last poll.
func (t *Tailer) Poll() {
	present := map[string]bool{}
	for _, dir := range t.cfg.Dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				t.log.Warn("cannot list stream-json directory", "dir", dir, "err", err)
			}
			continue
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			present[path] = true
			if fi, err := e.Info(); err == nil && t.unchanged(path, fi) {
				continue
			}
			t.follow(path)
		}
	}
	for _, p := range t.store.Files() {
		if !present[p] {
			// The capture is gone; what it held stays counted. A run it
			// left open never ends: count it as incomplete.
			if st, ok := t.store.File(p); ok {
				var incs []streamjson.Increments
				if inc, ok := st.Run.Finish(); ok {
					incs = append(incs, inc)
				}
				t.store.Apply(incs)
			}
			t.store.ForgetFile(p)
		}
	}
	for p := range t.seen {
		if !present[p] {
			delete(t.seen, p)
		}
	}
	t.Trace()
}

// unchanged reports whether the capture at path is the file last read, with
// the same size and mtime: then there is nothing new, and it is not opened.
func (t *Tailer) unchanged(path string, fi fs.FileInfo) bool {
	prev, ok := t.seen[path]
	return ok && os.SameFile(prev, fi) && prev.Size() == fi.Size() && prev.ModTime().Equal(fi.ModTime())
}

func (t *Tailer) follow(path string) {
	delete(t.seen, path)
	f, err := t.open(path)
	if err != nil {
		return // removed since the listing
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	ino := fileid.Of(fi).Inode
	st, known := t.store.File(path)
	var incs []streamjson.Increments
	switch {
	case !known:
		st = store.StreamFile{Inode: ino}
	case st.Inode != ino || fi.Size() < st.Offset || !sameHead(f, st):
		// Replaced (a new inode) or truncated: what we had read is gone,
		// the file is read again from its start as a new capture.
		t.log.Info("stream-json capture replaced or truncated; reading it from the start",
			"path", path, "previous_offset", st.Offset, "size", fi.Size())
		if inc, ok := st.Run.Finish(); ok {
			incs = append(incs, inc)
		}
		st = store.StreamFile{Inode: ino}
	case fi.Size() == st.Offset:
		t.seen[path] = fi
		return // nothing new
	}
	if _, err := f.Seek(st.Offset, io.SeekStart); err != nil {
		t.log.Warn("cannot seek stream-json capture", "path", path, "err", err)
		return
	}
	bad, firstBad := 0, ""
	n, err := scanLines(bufio.NewReaderSize(f, 64<<10), t.cfg.MaxLineBytes, false, func(line []byte, tooLong bool) {
		if tooLong {
			t.metrics.ParseFailed(store.SourceStream, streamjson.ReasonLineTooLong)
			bad++
			if firstBad == "" {
				firstBad = streamjson.ReasonLineTooLong
			}
			return
		}
		m, ok, perr := t.parser.ParseLine(line)
		if perr != nil {
			reason := streamjson.Reason(perr)
			t.metrics.ParseFailed(store.SourceStream, reason)
			bad++
			if firstBad == "" {
				firstBad = reason
			}
			return
		}
		if ok {
			incs = append(incs, st.Run.ApplyLine(m, line))
		}
	})
	if err != nil {
		t.log.Warn("cannot read stream-json capture", "path", path, "err", err)
	} else {
		t.seen[path] = fi // read as far as it went when stat was taken
	}
	if bad > 0 {
		t.log.Warn("skipped stream-json lines that do not parse; the other lines are counted",
			"path", path, "lines", bad, "first_reason", firstBad)
	}
	st.Offset += n
	if st.HeadLen < headBytes && int64(st.HeadLen) < st.Offset {
		st.HeadLen, st.HeadHash = head(f, st.Offset)
	}
	t.store.ApplyFile(path, st, incs)
}

// headBytes is how much of a capture's start identifies it.
const headBytes = 256

func head(f *os.File, offset int64) (int, uint64) {
	buf := make([]byte, min(offset, headBytes))
	n, _ := f.ReadAt(buf, 0)
	h := fnv.New64a()
	h.Write(buf[:n])
	return n, h.Sum64()
}

func sameHead(f *os.File, st store.StreamFile) bool {
	if st.HeadLen == 0 {
		return true
	}
	n, h := head(f, int64(st.HeadLen))
	return n == st.HeadLen && h == st.HeadHash
}
