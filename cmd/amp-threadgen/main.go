// Command amp-threadgen writes a deterministic corpus of synthetic Amp
// thread files, for benchmarks and end-to-end tests:
//
//	go run ./cmd/amp-threadgen -dir /tmp/corpus -threads 2000 -total-bytes 1GB -seed 1
//
// With -edits the edits have known line counts, printed after the summary
// line per repository, tool and kind, with the shell commands by outcome.
//
// Sizes take the suffixes B, kB, MB, GB, TB (powers of 1000) and KiB, MiB,
// GiB, TiB (powers of 1024), case-insensitive; the summary line reports
// decimal units.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

func main() { os.Exit(run()) }

func run() int {
	var (
		dir     = flag.String("dir", "", "directory to write the threads into (created if missing)")
		threads = flag.Int("threads", 2000, "number of thread files")
		total   = flag.String("total-bytes", "1GB", "approximate total size of the corpus, e.g. 1GB, 500MB, 64MiB")
		seed    = flag.Int64("seed", 1, "random seed; the same seed gives the same files")
		start   = flag.String("start", "", "creation time of the first thread, RFC 3339 (default "+threadgen.DefaultStart.Format(time.RFC3339)+")")
		days    = flag.Int("days", 0, "spread the threads' creation times evenly over this many days, e.g. 365 for a year of use (0: four weeks)")
		repos   = flag.Int("repositories", 0, "spread the threads over this many repositories, remotes written in every form, some threads without one (0: each thread's project on github.com)")
		edits   = flag.Bool("edits", false, "write edits whose line counts are known (and stopped shell commands), and print them per repository, tool and kind; off, the corpus is the same bytes as without the flag")
		commits = flag.Bool("commits", false, "make about one shell call in two commit, push or open a pull request (every case the exporter tells apart); off, the corpus is the same bytes as without the flag")
		skew    = flag.Bool("clock-skew", false, "write half the threads with a usage ledger from a client clock 2 to 36 hours ahead of the server's, so their ledger events are stamped before the thread was created; off, the corpus is the same bytes as without the flag")
	)
	flag.Parse()
	if *dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: amp-threadgen -dir DIR [-threads N] [-total-bytes SIZE] [-seed N] [-start RFC3339]")
		flag.PrintDefaults()
		return 2
	}
	size, err := parseSize(*total)
	if err != nil {
		fmt.Fprintf(os.Stderr, "amp-threadgen: -total-bytes: %v\n", err)
		return 2
	}
	if *threads < 0 || *days < 0 {
		fmt.Fprintln(os.Stderr, "amp-threadgen: -threads and -days must not be negative")
		return 2
	}
	opts := threadgen.Options{Threads: *threads, TotalBytes: size, Seed: *seed, Repositories: *repos, Edits: *edits, ClockSkew: *skew, Commits: *commits,
		Span: time.Duration(*days) * 24 * time.Hour}
	if *start != "" {
		if opts.Start, err = time.Parse(time.RFC3339, *start); err != nil {
			fmt.Fprintf(os.Stderr, "amp-threadgen: -start: %v\n", err)
			return 2
		}
	}

	began := time.Now()
	g := threadgen.New(opts)
	written, err := g.WriteDir(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "amp-threadgen: %v\n", err)
		return 1
	}
	elapsed := time.Since(began)

	sizes := make([]int64, 0, g.Len())
	for i := range g.Len() {
		fi, err := os.Stat(filepath.Join(*dir, g.Name(i)))
		if err != nil {
			fmt.Fprintf(os.Stderr, "amp-threadgen: %v\n", err)
			return 1
		}
		sizes = append(sizes, fi.Size())
	}
	slices.Sort(sizes)
	fmt.Printf("files=%d bytes=%d (%s) median=%s p99=%s max=%s time=%s (%.0f MB/s) dir=%s\n",
		len(sizes), written, human(written), human(quantile(sizes, 0.5)), human(quantile(sizes, 0.99)),
		human(quantile(sizes, 1)), elapsed.Round(10*time.Millisecond), float64(written)/1e6/elapsed.Seconds(), *dir)
	if *edits {
		printChanges(os.Stdout, g.Changes())
	}
	return 0
}

// printChanges prints what the corpus changed, one line per repository,
// tool and kind (lines) or outcome (shell commands): the values
// amp_lines_changed_total and amp_shell_commands_total must reach.
func printChanges(w io.Writer, byRepo map[string]*threadgen.Changes) {
	repos := slices.Sorted(maps.Keys(byRepo))
	for _, repo := range repos {
		c := byRepo[repo]
		keys := slices.SortedFunc(maps.Keys(c.Lines), func(a, b threadgen.LineKey) int {
			return cmp.Or(strings.Compare(a.Tool, b.Tool), strings.Compare(a.Kind, b.Kind))
		})
		for _, k := range keys {
			fmt.Fprintf(w, "lines repository=%q tool=%s kind=%s %d\n", repo, k.Tool, k.Kind, c.Lines[k])
		}
		for _, o := range slices.Sorted(maps.Keys(c.Shell)) {
			fmt.Fprintf(w, "shell repository=%q outcome=%s %d\n", repo, o, c.Shell[o])
		}
	}
}

// quantile returns the q-quantile of sorted values (nearest rank).
func quantile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func human(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fGB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fMB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fkB", float64(n)/1e3)
	}
	return fmt.Sprintf("%dB", n)
}

// parseSize parses "1GB", "500MB", "64MiB", "1.5 GiB" or a plain number of
// bytes.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
		"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30, "gib": 1 << 30, "ti": 1 << 40, "tib": 1 << 40,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q in %q (use B, kB, MB, GB, KiB, MiB, GiB)", unit, s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) {
		return 0, errors.New("invalid size " + strconv.Quote(s))
	}
	return int64(f * mult), nil
}
