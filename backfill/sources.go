package backfill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// ThreadFiles lists the thread files of dirs (*.json, not hidden), largest
// first (as the live exporter's first scan takes them, so that a big file
// does not leave one worker alone at the end).
// A directory that does not exist has none.
func ThreadFiles(dirs []string) ([]string, error) {
	var out []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("thread directory %q: %w", dir, err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.Type().IsRegular() && strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".") {
				out = append(out, filepath.Join(dir, name))
			}
		}
	}
	type sized struct {
		path string
		size int64
	}
	files := make([]sized, len(out))
	// The sizes are asked on every core: tens of thousands of stat(2)
	// calls are a tenth of a report's time on one.
	parts := max(1, min(runtime.GOMAXPROCS(0), len(out)/statShare))
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			for i := p; i < len(out); i += parts {
				files[i].path = out[i]
				if fi, err := os.Stat(out[i]); err == nil {
					files[i].size = fi.Size()
				}
			}
		})
	}
	wg.Wait()
	slices.SortFunc(files, func(a, b sized) int {
		if a.size != b.size {
			return cmp.Compare(b.size, a.size)
		}
		return strings.Compare(a.path, b.path)
	})
	for i, f := range files {
		out[i] = f.path
	}
	return out, nil
}

// statShare is the fewest files ThreadFiles gives a core of its own.
const statShare = 512

// ScanResult is what a scan of thread files found.
type ScanResult struct {
	Files int
	Bytes int64
	// Failed counts the files that could not be read or parsed, by reason
	// (the reasons of amp_exporter_parse_errors_total).
	Failed map[string]int
	// Duplicates are files of a thread another file already gave.
	Duplicates int
}

// ThreadAdder counts a thread: the backfill (Backfill.AddThread), or a
// store that keeps a ledger (the report).
type ThreadAdder interface {
	AddThread(source, path string, sum *thread.Summary) error
}

// LinesSkipper is a ThreadAdder that keeps no lines changed: ScanFiles
// then leaves them uncounted (thread.Parser.SkipLineCounts).
type LinesSkipper interface {
	SkipsLines() bool
}

// ScanFiles parses the thread files with workers goroutines and replays
// each into b under source "threads", claiming its thread id in owners
// (nil: none) so the Amp server's copy of it is skipped. A file that does
// not parse is counted in Failed and skipped, as the live exporter skips
// it. progress, if not nil, is called after each file.
func ScanFiles(ctx context.Context, b ThreadAdder, files []string, maxBytes int64, workers int,
	owners *store.Owners, progress func(done int)) (ScanResult, error) {
	if workers <= 0 {
		workers = 1
	}
	var (
		next  atomic.Int64
		done  atomic.Int64
		mu    sync.Mutex
		res   = ScanResult{Failed: map[string]int{}}
		seen  = map[string]bool{}
		first error
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := thread.NewParser()
			if ls, ok := b.(LinesSkipper); ok && ls.SkipsLines() {
				p.SkipLineCounts()
			}
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(files) {
					return
				}
				path := files[i]
				t, size, err := parseFile(p, path, maxBytes)
				if err != nil {
					mu.Lock()
					res.Failed[reason(err)]++
					mu.Unlock()
				} else {
					sum := thread.SummarizeItems(t)
					key := sum.ID
					if key == "" {
						key = "file:" + filepath.Base(path)
					}
					mu.Lock()
					dup := seen[key]
					seen[key] = true
					res.Files++
					if dup {
						res.Duplicates++
					}
					mu.Unlock()
					if !dup && (owners == nil || owners.Claim(sum.ID, store.SourceThreads)) {
						if err := b.AddThread(store.SourceThreads, path, sum); err != nil {
							mu.Lock()
							first = firstErr(first, fmt.Errorf("%q: %w", path, err))
							mu.Unlock()
						}
					}
				}
				mu.Lock()
				res.Bytes += size
				mu.Unlock()
				n := done.Add(1)
				if progress != nil {
					progress(int(n))
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, first
}

// parseFile reads and parses one thread file of at most maxBytes, as the
// live exporter's watcher does.
func parseFile(p *thread.Parser, path string, maxBytes int64) (*thread.Thread, int64, error) {
	f, size, err := openThreadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errRead, err)
	}
	defer f.Close()
	if maxBytes > 0 && size > maxBytes {
		return nil, size, errTooLarge
	}
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	t, err := p.Parse(io.LimitReader(f, maxBytes+1))
	return t, size, err
}

var (
	errRead     = errors.New("read")
	errTooLarge = errors.New("too large")
)

// reason classifies a failed file as amp_exporter_parse_errors_total does.
func reason(err error) string {
	switch {
	case errors.Is(err, errTooLarge):
		return thread.ReasonTooLarge
	case errors.Is(err, errRead):
		return thread.ReasonRead
	}
	return thread.Reason(err)
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// ServerStore is the store the Amp server source's syncer fills in a
// backfill (it has the methods of ampserver.Store): every thread it
// fetches is replayed into the Backfill under source "server"; bills,
// which carry no per-item time, are not history.
type ServerStore struct {
	B *Backfill
	// Threads counts the threads replayed; Err is the first replay error.
	Threads atomic.Int64
	mu      sync.Mutex
	Err     error
}

// File reports that no thread was counted before: every listed thread is
// fetched.
func (s *ServerStore) File(string) (store.FileRecord, bool) { return store.FileRecord{}, false }

// Apply replays a fetched thread.
func (s *ServerStore) Apply(path string, _ store.FileVersion, sum *thread.Summary) bool {
	if err := s.B.AddThread(store.SourceAmpServer, path, sum); err != nil {
		s.mu.Lock()
		s.Err = firstErr(s.Err, err)
		s.mu.Unlock()
		return false
	}
	s.Threads.Add(1)
	return true
}

// Remove does nothing: a thread gone from the server has no history to
// write.
func (s *ServerStore) Remove(string) {}

// ApplyBilled does nothing: billed cost has no per-item time.
func (s *ServerStore) ApplyBilled(string, map[string]float64) bool { return false }

// AmpServerPaths is empty: nothing was counted before.
func (s *ServerStore) AmpServerPaths() []string { return nil }

// FirstErr returns the first replay error.
func (s *ServerStore) FirstErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Err
}
