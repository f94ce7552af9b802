package backfill

import (
	"context"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

var (
	benchOnce  sync.Once
	benchFiles []string
	benchErr   error
)

// benchCorpus is $AMP_BENCH_CORPUS (the 1 GB corpus of
// scripts/bench-backfill.sh), else a 100 MB one generated once.
func benchCorpus(b *testing.B) []string {
	b.Helper()
	benchOnce.Do(func() {
		dir := os.Getenv("AMP_BENCH_CORPUS")
		if dir == "" {
			if dir, benchErr = os.MkdirTemp("", "amp-backfill-bench-"); benchErr != nil {
				return
			}
			g := threadgen.New(threadgen.Options{Threads: 200, TotalBytes: 100 << 20, Seed: 1})
			if _, benchErr = g.WriteDir(dir); benchErr != nil {
				return
			}
		}
		benchFiles, benchErr = ThreadFiles([]string{dir})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchFiles
}

// BenchmarkBackfill: the whole backfill of the corpus (parse, replay,
// OpenMetrics written), beside the live store's first scan of it in the
// same run (parse and apply each thread once): x-scan is the ratio (the
// budget is 2).
func BenchmarkBackfill(b *testing.B) {
	files := benchCorpus(b)
	workers := runtime.GOMAXPROCS(0)
	until := threadgen.DefaultStart.Add(threadgen.Spread + 3*24*time.Hour)
	var scanTime, bfTime time.Duration
	for b.Loop() {
		t0 := time.Now()
		live := store.NewThreadStore(store.StoreOptions{})
		if err := scanLive(files, workers, live); err != nil {
			b.Fatal(err)
		}
		scanTime += time.Since(t0)

		t0 = time.Now()
		bf, err := New(Options{Until: until})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ScanFiles(context.Background(), bf, files, 1<<40, workers, nil, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := WriteOpenMetrics(io.Discard, bf.Series(bf.Range(time.Time{})), nil); err != nil {
			b.Fatal(err)
		}
		bfTime += time.Since(t0)
	}
	b.ReportMetric(float64(bfTime)/float64(scanTime), "x-scan")
	b.ReportMetric(scanTime.Seconds()/float64(b.N), "scan-s")
	b.ReportMetric(bfTime.Seconds()/float64(b.N), "backfill-s")
}

// scanLive is the live first scan's work: each file parsed and applied
// once to one store.
func scanLive(files []string, workers int, st *store.ThreadStore) error {
	var wg sync.WaitGroup
	next := make(chan string)
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := thread.NewParser()
			for path := range next {
				t, _, err := parseFile(p, path, 1<<40)
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				st.Apply(path, store.FileVersion{}, thread.Summarize(t))
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
