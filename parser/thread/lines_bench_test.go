//go:build unix

package thread

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCorpusLineCounting is what counting lines costs a scan: every
// thread file of a corpus read from disk, parsed and summarized on one
// goroutine, with the edit inputs read and diffed and the shell exit codes
// read ("full"), with the exit codes only ("no-lines"), and with neither
// ("neither"): each file in the three modes one after the other, in turns
// (A B C, B C A, …), so that the machine's load falls on all alike. It reports the
// median of the process's CPU per pass of each mode, and the medians of
// each round's ratios. The corpus is AMP_BENCH_CORPUS, e.g. the 1 GB one of
// docs/performance.md:
//
//	go run ./cmd/amp-threadgen -dir /tmp/amp-corpus-1g -threads 2000 -total-bytes 1GB -seed 1
//	AMP_BENCH_CORPUS=/tmp/amp-corpus-1g go test ./parser/thread -run '^$' -bench CorpusLineCounting -benchtime 5x
//
// Without it, the in-memory benchmark corpus is written to a temporary
// directory.
func BenchmarkCorpusLineCounting(b *testing.B) {
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
	defer func() { countLines, readExits = true, true }()
	modes := []struct {
		name              string
		lines, exits      bool
		cpu               []float64 // ms per round
		edited, commanded int64
	}{
		{name: "full", lines: true, exits: true},
		{name: "no-lines", exits: true},
		{name: "neither"},
	}
	p := NewParser()
	var total int64
	b.ResetTimer()
	for i := range b.N {
		for k := range modes {
			modes[k].cpu = append(modes[k].cpu, 0)
			modes[k].edited, modes[k].commanded = 0, 0
		}
		total = 0
		// File by file, each in the three modes in turn: a change of
		// load elsewhere falls on all three within milliseconds.
		for f, path := range files {
			for k := range modes {
				m := &modes[(i+f+k)%len(modes)]
				countLines, readExits = m.lines, m.exits
				start := cpuTime(b)
				n, edited, commanded, err := scanFiles(p, files[f:f+1])
				if err != nil {
					b.Fatal(fmt.Errorf("%s: %w", path, err))
				}
				m.cpu[i] += (cpuTime(b) - start).Seconds() * 1000
				m.edited += edited
				m.commanded += commanded
				if k == 0 {
					total += n
				}
			}
		}
	}
	b.StopTimer()
	b.SetBytes(total * int64(len(modes)))
	full, noLines, neither := modes[0], modes[1], modes[2]
	if full.edited == 0 || noLines.edited != 0 || full.commanded == 0 || neither.commanded != 0 {
		b.Fatalf("the switches did not switch: lines %d/%d, commands %d/%d", full.edited, noLines.edited, full.commanded, neither.commanded)
	}
	// Each pass's ratios, then their median.
	ratio := func(a, b []float64) float64 {
		r := make([]float64, len(a))
		for i := range a {
			r[i] = a[i] / b[i]
		}
		return median(r)
	}
	for _, m := range modes {
		b.ReportMetric(median(m.cpu), m.name+"-cpu-ms/pass")
	}
	b.ReportMetric(ratio(full.cpu, noLines.cpu), "full/no-lines")
	b.ReportMetric(ratio(full.cpu, neither.cpu), "full/neither")
	b.ReportMetric(ratio(noLines.cpu, neither.cpu), "no-lines/neither")
}

// median is the median of xs (which it sorts).
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// scanFiles parses and summarizes every file as the watcher does (through
// the scanner's window) and returns the bytes read, the lines counted and
// the shell commands that succeeded (known from their exit codes).
func scanFiles(p *Parser, files []string) (n, lines, commands int64, err error) {
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return n, lines, commands, err
		}
		th, err := p.Parse(f)
		f.Close()
		if err != nil {
			return n, lines, commands, fmt.Errorf("%s: %w", path, err)
		}
		s := Summarize(th)
		for _, it := range s.Items {
			lines += it.Added + it.Removed
			if it.Shell == ShellSuccess { // known from an exit code only
				commands++
			}
		}
		if fi, err := os.Stat(path); err == nil {
			n += fi.Size()
		}
	}
	return n, lines, commands, nil
}
