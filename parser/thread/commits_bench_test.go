//go:build unix

package thread

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCorpusCommitCounting is what counting commits, pull requests
// and pushes costs a scan: every thread file of a corpus read from disk,
// parsed and summarized on one goroutine with shell commands and their
// outputs read by parser/shellcmd ("commits") and without ("none"), each
// file in both modes one after the other, in turns, so that the machine's
// load falls on both alike. It reports the median of the process's CPU
// per pass of each mode and the median of each pass's ratio; the share
// of a scan that counting takes is 1 - none/commits. The corpus is
// AMP_BENCH_CORPUS, e.g. the 1 GB one of docs/performance.md, or the same
// with -commits, where one shell call in two commits, pushes or opens a
// pull request:
//
//	go run ./cmd/amp-threadgen -dir /tmp/amp-corpus-1g -threads 2000 -total-bytes 1GB -seed 1
//	AMP_BENCH_CORPUS=/tmp/amp-corpus-1g go test ./parser/thread -run '^$' -bench CorpusCommitCounting -benchtime 5x
//
// Without it, the in-memory benchmark corpus is written to a temporary
// directory.
func BenchmarkCorpusCommitCounting(b *testing.B) {
	dir := os.Getenv("AMP_BENCH_CORPUS")
	if dir == "" {
		dir = b.TempDir()
		docs, _ := benchDocs(b)
		for i, d := range docs {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("T-%04d.json", i)), d, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no *.json in %s (%v)", dir, err)
	}
	defer func() { countCommits = true }()
	modes := []struct {
		name    string
		on      bool
		cpu     []float64 // ms per pass
		counted int64     // commits, requests and pushes
	}{
		{name: "commits", on: true},
		{name: "none"},
	}
	p := NewParser()
	var total int64
	b.ResetTimer()
	for i := range b.N {
		for k := range modes {
			modes[k].cpu = append(modes[k].cpu, 0)
			modes[k].counted = 0
		}
		total = 0
		for f, path := range files {
			for k := range modes {
				m := &modes[(i+f+k)%len(modes)]
				countCommits = m.on
				start := cpuTime(b)
				n, counted, err := scanCommits(p, path)
				if err != nil {
					b.Fatal(err)
				}
				m.cpu[i] += (cpuTime(b) - start).Seconds() * 1000
				m.counted += counted
				if k == 0 {
					total += n
				}
			}
		}
	}
	b.StopTimer()
	b.SetBytes(total * int64(len(modes)))
	on, off := modes[0], modes[1]
	if off.counted != 0 {
		b.Fatalf("the switch did not switch: %d counted without commits", off.counted)
	}
	r := make([]float64, len(on.cpu))
	for i := range r {
		r[i] = on.cpu[i] / off.cpu[i]
	}
	for _, m := range modes {
		b.ReportMetric(median(m.cpu), m.name+"-cpu-ms/pass")
	}
	b.ReportMetric(float64(on.counted), "counted/pass")
	b.ReportMetric(median(r), "commits/none")
}

// scanCommits parses and summarizes a file as the watcher does and returns
// its size and the commits, requests and pushes its items counted.
func scanCommits(p *Parser, path string) (n, counted int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	th, err := p.Parse(f)
	f.Close()
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	for _, it := range Summarize(th).Items {
		counted += int64(it.Commits + it.PullRequests + it.Pushes + it.FailedPushes)
	}
	if fi, err := os.Stat(path); err == nil {
		n = fi.Size()
	}
	return n, counted, nil
}
