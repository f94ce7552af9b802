package threads

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/jsonscan"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// The benchmarks read a generated corpus: by default 200 threads of about
// 100 MB in all (the same size distribution as the 2,000-thread, 1 GB one,
// scaled down). Set AMP_BENCH_CORPUS to a directory to use another one, for
// example the full corpus from
//
//	go run ./cmd/amp-threadgen -dir /tmp/corpus -threads 2000 -total-bytes 1GB
var (
	corpusOnce  sync.Once
	corpusDir   string
	corpusFiles []string
	corpusBytes int64
	corpusErr   error
)

func corpus(b *testing.B) ([]string, int64) {
	b.Helper()
	corpusOnce.Do(func() {
		corpusDir = os.Getenv("AMP_BENCH_CORPUS")
		if corpusDir == "" {
			corpusDir, corpusErr = os.MkdirTemp("", "amp-bench-corpus-")
			if corpusErr != nil {
				return
			}
			g := threadgen.New(threadgen.Options{Threads: 200, TotalBytes: 100 << 20, Seed: 1, Start: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)})
			if _, corpusErr = g.WriteDir(corpusDir); corpusErr != nil {
				return
			}
		}
		corpusFiles, corpusErr = filepath.Glob(filepath.Join(corpusDir, "*.json"))
		for _, f := range corpusFiles {
			fi, err := os.Stat(f)
			if err != nil {
				corpusErr = err
				return
			}
			corpusBytes += fi.Size()
		}
	})
	if corpusErr != nil {
		b.Fatal(corpusErr)
	}
	if len(corpusFiles) == 0 {
		b.Fatalf("no *.json in %s", corpusDir)
	}
	return corpusFiles, corpusBytes
}

func TestMain(m *testing.M) {
	code := m.Run()
	if os.Getenv("AMP_BENCH_CORPUS") == "" && corpusDir != "" {
		os.RemoveAll(corpusDir)
	}
	os.Exit(code)
}

// readRaw reads every file into a reused buffer on `workers` goroutines:
// the floor any parser is measured against.
func readRaw(files []string, workers int) error {
	return parallel(files, workers, func() func(string) error {
		buf := make([]byte, 256<<10)
		return func(path string) error {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			for {
				_, err := f.Read(buf)
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
			}
		}
	})
}

func parallel(files []string, workers int, newWorker func() func(string) error) error {
	next := make(chan string)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do := newWorker()
			for f := range next {
				if err := do(f); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for _, f := range files {
		next <- f
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// BenchmarkInitialScan is what start-up costs: every file of the corpus read
// and counted, by the scanner-based parser, by the watcher (parser plus
// store), and for comparison by a skip of each whole document (the floor
// for finding where strings end) and by encoding/json into typed structs,
// each against raw reading measured in the same iteration. x-raw is the
// ratio to raw reading (the budget is 4x).
func BenchmarkInitialScan(b *testing.B) {
	files, total := corpus(b)
	workers := runtime.GOMAXPROCS(0)
	methods := []struct {
		name string
		run  func() error
	}{
		{"scanner", func() error {
			return parallel(files, workers, func() func(string) error {
				p := thread.NewParser()
				return func(path string) error {
					f, err := os.Open(path)
					if err != nil {
						return err
					}
					defer f.Close()
					th, err := parseFile(p, f, 1<<40)
					if err != nil {
						return fmt.Errorf("%s: %w", path, err)
					}
					thread.Summarize(th)
					return nil
				}
			})
		}},
		{"watcher", func() error {
			// The watcher's first scan, into a fresh store: the real
			// start-up path, with stat checks and contribution merging.
			store := store.NewThreadStore(store.StoreOptions{})
			w := New(Config{Dirs: []string{filepath.Dir(files[0])}, ResyncInterval: time.Hour, PollInterval: time.Hour, MaxFileBytes: 1 << 40},
				Options{Workers: workers}, store, nopMetrics{})
			w.scanAll(context.Background())
			return nil
		}},
		{"skip-only", func() error {
			// A floor for any parser that must know where strings end:
			// read each file through the scanner's window and skip the
			// whole document as one value, decoding nothing.
			return parallel(files, workers, func() func(string) error {
				sc := jsonscan.New(nil)
				return func(path string) error {
					f, err := os.Open(path)
					if err != nil {
						return err
					}
					defer f.Close()
					sc.Reset(f)
					sc.Skip()
					if !sc.AtEOF() {
						return fmt.Errorf("%s: %v", path, sc.Err())
					}
					return nil
				}
			})
		}},
		{"encoding-json", func() error {
			return parallel(files, workers, func() func(string) error {
				return func(path string) error {
					f, err := os.Open(path)
					if err != nil {
						return err
					}
					defer f.Close()
					var doc typedThread
					return json.NewDecoder(f).Decode(&doc)
				}
			})
		}},
	}
	for _, m := range methods {
		b.Run(fmt.Sprintf("%s/workers=%d", m.name, workers), func(b *testing.B) {
			b.SetBytes(total)
			var raw, parse time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if err := readRaw(files, workers); err != nil {
					b.Fatal(err)
				}
				raw += time.Since(start)
				start = time.Now()
				if err := m.run(); err != nil {
					b.Fatal(err)
				}
				parse += time.Since(start)
			}
			// The timer includes both; the metrics separate them.
			b.ReportMetric(float64(total)*float64(b.N)/parse.Seconds()/1e6, "parse-MB/s")
			b.ReportMetric(float64(total)*float64(b.N)/raw.Seconds()/1e6, "raw-MB/s")
			b.ReportMetric(parse.Seconds()/raw.Seconds(), "x-raw")
		})
	}
}

// typedThread is what a straightforward encoding/json implementation would
// decode: every message with its content.
type typedThread struct {
	V        int64 `json:"v"`
	ID       string
	Messages []struct {
		Role    string
		Content []struct {
			Type      string
			ID        string
			Name      string
			ToolUseID string `json:"toolUseID"`
			Run       *struct {
				Status string
				Result json.RawMessage
			}
			Text     string
			Thinking string
		}
		State *struct{ Type, StopReason string }
		Usage map[string]any
	}
}

type nopMetrics struct{}

func (nopMetrics) ParseFailed(string, string)   {}
func (nopMetrics) Parsed(string, time.Duration) {}
func (nopMetrics) WatcherFellBack(string)       {}
func (nopMetrics) WatcherPolling(bool)          {}
func (nopMetrics) DirsMissing(int)              {}
