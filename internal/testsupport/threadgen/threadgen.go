// Package threadgen generates deterministic, realistic synthetic Amp thread
// files (T-<uuid>.json) for benchmarks and end-to-end tests.
//
// The corpus imitates a measured real one. File sizes follow a log-normal
// distribution sampled at its quantiles (median ≈ 0.4 × mean, p99 ≈ 9.3 ×
// mean, max ≈ 45 × mean for 2,000 threads), so 1 GB over 2,000 threads
// gives a median of ~200 kB, a p99 of ~4.7 MB and a largest thread of
// ~22 MB, with a few threads over 10 MB made of huge tool outputs and base64
// images. About 74% of the bytes are tool results and about 87% are the
// contents of JSON string values (90% counting keys). Files are written the
// way the Amp CLI writes them, JSON.stringify(thread, null, 2), with the
// same escapes.
//
// Thread i depends only on the options and i: it is generated from its own
// PCG stream, without generating any other thread, and the corpus is never
// held in memory. Generating runs at ~1.5 GB/s on one core.
package threadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// Options configures a corpus.
type Options struct {
	Threads    int       // number of thread files
	TotalBytes int64     // approximate total size of the corpus; 0 means 500 kB per thread
	Seed       int64     // the same options give the same bytes
	Start      time.Time // creation time of the first thread; threads spread over the following weeks. Zero means DefaultStart.
	// Span is the time the threads' creation times spread over, evenly
	// (a year of use: 365 days); zero means Spread. With the same other
	// options the threads are the same but for their times.
	Span time.Duration
	// Repositories spreads the threads over this many repositories whose
	// remotes are written in every form, some threads without a remote
	// (repositories.go); 0: each thread's project on github.com.
	Repositories int
	// Edits writes edits whose line counts the generator knows (edits.go,
	// Changes): edit_file, create_file and apply_patch built from edit
	// scripts, the legacy enqueue_file_edit and fastmod, and shell
	// commands that were stopped (exit code -1) besides those that
	// succeeded and failed. Off, the corpus is the same bytes as before
	// the option existed.
	Edits bool
	// ClockSkew writes half the threads with a usage ledger as a client
	// whose clock is 2 to 36 hours ahead of the Amp server's (one keeping
	// local time read as UTC, a date set a day ahead): the server stamps
	// the ledger events, so they are stamped hours before the thread was
	// created, on other days than it. Off, the corpus is the same bytes as
	// before the option existed.
	ClockSkew bool
	// Speeds gives some threads billed by their messages a speed, named
	// in their usage's features (speeds.go): fast on Claude Opus 4.6, also
	// from a message mid-thread, plaid on GPT-6 Astra (a model the
	// corpus otherwise never uses) and on Opus, where it is billed fast.
	// Off, the corpus is the same bytes as before the option existed.
	Speeds bool
	// Commits makes about one shell call in two run a command that
	// commits, pushes or opens a pull request, of every case the
	// exporter tells apart (commits.go), whose outcome Changes knows. Off,
	// the corpus is the same bytes as before the option existed.
	Commits bool
}

// DefaultStart is the creation time of the first thread when Options.Start
// is zero: the local-thread-file era of the Amp CLI (CLI-Feb).
var DefaultStart = time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC)

// Spread is the time over which thread creation times are spread when
// Options.Span is zero.
const Spread = 28 * 24 * time.Hour

const (
	// sigma is the log-space spread of thread sizes: exp(-sigma²/2) = 0.4
	// (median/mean of the measured corpus), which also gives its p99
	// (≈ 9.3 × mean) and, for 2,000 threads, its maximum (≈ 45 × mean).
	sigma = 1.3537
	// minTarget is the smallest planned thread size.
	minTarget = 3000
	// defaultMean is the mean thread size when TotalBytes is not set.
	defaultMean = 500_000
	// reserve is the room left in front of the body for the header, which
	// is written last (it holds counts known only at the end).
	reserve = 4096
)

// Generator generates the threads of one corpus. It is safe for concurrent
// use: Thread may be called from several goroutines.
type Generator struct {
	n       int
	seed    uint64
	startMs int64
	slotMs  float64
	perm    feistel
	targets []int64 // planned size by size rank, ascending
	repos   int     // Options.Repositories
	edits   bool    // Options.Edits
	skew    bool    // Options.ClockSkew
	speeds  bool    // Options.Speeds
	commits bool    // Options.Commits
}

// New returns the generator of the corpus described by opts.
func New(opts Options) *Generator {
	poolsOnce.Do(buildPools)
	n := max(opts.Threads, 0)
	total := opts.TotalBytes
	if total <= 0 {
		total = int64(n) * defaultMean
	}
	start := opts.Start
	if start.IsZero() {
		start = DefaultStart
	}
	g := &Generator{
		n:       n,
		seed:    splitmix(uint64(opts.Seed) ^ 0x7468726561646765), // "threadge"
		startMs: start.UnixMilli(),
		repos:   opts.Repositories,
		edits:   opts.Edits,
		skew:    opts.ClockSkew,
		speeds:  opts.Speeds,
		commits: opts.Commits,
	}
	span := opts.Span
	if span <= 0 {
		span = Spread
	}
	if n > 0 {
		g.slotMs = float64(span.Milliseconds()) / float64(n)
	}
	g.perm = newFeistel(uint64(n), g.seed)
	g.targets = plan(n, total)
	return g
}

// plan returns n planned sizes, ascending, following a log-normal
// distribution sampled at its quantile midpoints (so the empirical
// distribution matches the shape for any n) and scaled so that they add up
// to total.
func plan(n int, total int64) []int64 {
	q := make([]float64, n)
	for k := range q {
		u := (float64(k) + 0.5) / float64(n)
		q[k] = math.Exp(sigma * math.Sqrt2 * math.Erfinv(2*u-1))
	}
	sum := func(m float64) float64 {
		s := 0.0
		for _, x := range q {
			s += max(minTarget, m*x)
		}
		return s
	}
	m := 0.0
	if n > 0 && float64(n)*minTarget < float64(total) {
		lo, hi := 0.0, float64(total)/q[0]
		for range 80 {
			mid := (lo + hi) / 2
			if sum(mid) < float64(total) {
				lo = mid
			} else {
				hi = mid
			}
		}
		m = (lo + hi) / 2
	}
	t := make([]int64, n)
	for k, x := range q {
		t[k] = int64(max(minTarget, m*x))
	}
	return t
}

// Len returns the number of threads in the corpus.
func (g *Generator) Len() int { return g.n }

// TargetSize returns the planned size of thread i in bytes; the file
// Thread(i) returns is within a few percent of it (small threads have a
// floor of about 2.5 kB).
func (g *Generator) TargetSize(i int) int64 {
	return g.targets[g.perm.at(uint64(i))]
}

// Created returns the creation time of thread i. Thread 0 is created at
// Options.Start, later threads in order over the following Options.Span
// (four weeks by default).
func (g *Generator) Created(i int) time.Time {
	return time.UnixMilli(g.createdMs(i)).UTC()
}

func (g *Generator) createdMs(i int) int64 {
	if i == 0 {
		return g.startMs
	}
	r := g.rng(i, 1)
	return g.startMs + int64((float64(i)+0.9*r.Float64())*g.slotMs)
}

// Name returns the file name of thread i ("T-<uuid>.json") without
// generating it.
func (g *Generator) Name(i int) string {
	return g.threadID(i) + ".json"
}

// threadID is "T-" and a UUIDv7 whose first 48 bits are the creation time.
func (g *Generator) threadID(i int) string {
	r := g.rng(i, 2)
	return "T-" + uuid7(g.createdMs(i), r)
}

func (g *Generator) rng(i, stream int) *rand.Rand {
	return rand.New(rand.NewPCG(g.seed^splitmix(uint64(stream)), splitmix(uint64(i)+0x51ed)))
}

// serverBehind returns how far, in ms, the client clock that wrote ledger
// thread i is ahead of the Amp server's (Options.ClockSkew): 0 for half of
// them, else between 2 and 36 hours. It draws from a stream of its own,
// so a thread's other bytes do not depend on it.
func (g *Generator) serverBehind(i int) int64 {
	r := g.rng(i, 8)
	if !g.skew || r.IntN(2) == 0 {
		return 0
	}
	const hour = int64(time.Hour / time.Millisecond)
	return 2*hour + r.Int64N(34*hour)
}

// Thread returns thread i of the corpus as the bytes of a T-<uuid>.json
// file, and its file name.
func (g *Generator) Thread(i int) (name string, data []byte) {
	name, data, _, _ = g.thread(i, nil)
	return name, data
}

// thread generates thread i into buf (reused when large enough) and returns
// the file contents (a subslice of the returned buffer) and the time of the
// last activity in the thread (epoch ms).
func (g *Generator) thread(i int, buf []byte) (name string, data, newBuf []byte, lastMs int64) {
	if i < 0 || i >= g.n {
		panic(fmt.Sprintf("threadgen: thread %d out of range [0, %d)", i, g.n))
	}
	target := int(g.TargetSize(i))
	if cap(buf) < target+reserve+64<<10 {
		buf = make([]byte, 0, target+target/16+reserve+64<<10)
	}
	t := newThread(g, i, target, buf[:reserve])
	t.body()
	header := t.header(make([]byte, 0, 2048))
	out := t.w.b
	if len(header) <= reserve {
		start := reserve - len(header)
		copy(out[start:], header)
		data = out[start:]
	} else {
		data = append(header, out[reserve:]...)
	}
	return t.id + ".json", data, out, t.now
}

// WriteDir writes every thread into dir atomically (temp file + rename) and
// returns the total bytes written. The directory is created if needed; each
// file's modification time is set to the last activity in its thread. One
// thread is in memory at a time.
func (g *Generator) WriteDir(dir string) (int64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("threadgen: %w", err)
	}
	var (
		total int64
		buf   []byte
	)
	for i := range g.n {
		name, data, nb, last := g.thread(i, buf)
		buf = nb
		path := filepath.Join(dir, name)
		tmp := path + ".amptmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return total, fmt.Errorf("threadgen: write %q: %w", tmp, err)
		}
		mt := time.UnixMilli(last)
		if err := os.Chtimes(tmp, mt, mt); err != nil {
			return total, fmt.Errorf("threadgen: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return total, fmt.Errorf("threadgen: %w", err)
		}
		total += int64(len(data))
		if cap(buf) > 64<<20 {
			buf = nil // do not keep a monster's buffer for the rest
		}
	}
	return total, nil
}
