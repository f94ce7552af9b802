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
	"encoding/base64"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Options configures a corpus.
type Options struct {
	Threads    int       // number of thread files
	TotalBytes int64     // approximate total size of the corpus; 0 means 500 kB per thread
	Seed       int64     // the same options give the same bytes
	Start      time.Time // creation time of the first thread; threads spread over the following weeks. Zero means DefaultStart.
	// Repositories spreads the threads over this many repositories whose
	// remotes are written in every form, some threads without a remote
	// (repositories.go); 0: each thread's project on github.com.
	Repositories int
}

// DefaultStart is the creation time of the first thread when Options.Start
// is zero: the local-thread-file era of the Amp CLI (CLI-Feb).
var DefaultStart = time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC)

// Spread is the time over which thread creation times are spread.
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
	}
	if n > 0 {
		g.slotMs = float64(Spread.Milliseconds()) / float64(n)
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
// Options.Start, later threads in order over the following four weeks.
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

// ---------------------------------------------------------------------------
// Pretty-printing JSON writer (the layout of JSON.stringify(v, null, 2)).

type jw struct {
	b     []byte
	depth int
	cnt   [48]int32
}

const spaces = "                                                                                                                                "

func (w *jw) sep() {
	if w.cnt[w.depth] > 0 {
		w.b = append(w.b, ',')
	}
	w.cnt[w.depth]++
	w.b = append(w.b, '\n')
	w.b = append(w.b, spaces[:2*w.depth]...)
}

// key starts an object member; k must not need escaping.
func (w *jw) key(k string) {
	w.sep()
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':', ' ')
}

func (w *jw) open(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.cnt[w.depth] = 0
}

func (w *jw) obj() { w.open('{') }
func (w *jw) arr() { w.open('[') }

func (w *jw) end(c byte) {
	if w.cnt[w.depth] > 0 {
		w.b = append(w.b, '\n')
		w.b = append(w.b, spaces[:2*(w.depth-1)]...)
	}
	w.b = append(w.b, c)
	w.depth--
}

func (w *jw) endObj() { w.end('}') }
func (w *jw) endArr() { w.end(']') }

func (w *jw) str(s string) {
	w.b = append(w.b, '"')
	w.b = appendEscaped(w.b, s)
	w.b = append(w.b, '"')
}

func (w *jw) kStr(k, v string) { w.key(k); w.str(v) }
func (w *jw) kInt(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}
func (w *jw) kBool(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}
func (w *jw) kFloat(k string, v float64) {
	w.key(k)
	w.b = strconv.AppendFloat(w.b, v, 'f', -1, 64)
}
func (w *jw) kObj(k string) { w.key(k); w.obj() }
func (w *jw) kArr(k string) { w.key(k); w.arr() }
func (w *jw) eStr(v string) { w.sep(); w.str(v) }
func (w *jw) eInt(v int64) {
	w.sep()
	w.b = strconv.AppendInt(w.b, v, 10)
}
func (w *jw) eObj() { w.sep(); w.obj() }

// kEmpty writes k: {} or k: [].
func (w *jw) kEmpty(k, v string) {
	w.key(k)
	w.b = append(w.b, v...)
}

// kBegin starts a string member whose content the caller appends, already
// escaped, to w.b; strEnd closes it.
func (w *jw) kBegin(k string) {
	w.key(k)
	w.b = append(w.b, '"')
}
func (w *jw) strEnd() { w.b = append(w.b, '"') }

// appendEscaped escapes s the way JSON.stringify does: \" \\ \b \f \n \r \t,
// other control characters as \u00xx, everything else (including non-ASCII
// and U+2028/U+2029) as is.
func appendEscaped(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		}
		start = i + 1
	}
	return append(dst, s[start:]...)
}

// ---------------------------------------------------------------------------
// Thread generation.

type toolKind uint8

const (
	tBash toolKind = iota
	tShell
	tRead
	tGrep
	tGlob
	tEdit
	tCreate
	tWebPage
	tWebSearch
	tTask
	tFinder
	tOracle
	tMCP
	tDeploy
	tPatch
	nTools
)

var toolNames = [nTools]string{
	tBash: "Bash", tShell: "shell_command", tRead: "Read", tGrep: "Grep", tGlob: "glob",
	tEdit: "edit_file", tCreate: "create_file", tWebPage: "read_web_page", tWebSearch: "web_search",
	tTask: "Task", tFinder: "finder", tOracle: "oracle", tMCP: "mcp__github__search_code",
	tDeploy: "tb__deploy", tPatch: "apply_patch",
}

// toolMult is the mean result size of a tool relative to the thread's mean.
var toolMult = [nTools]float64{
	tBash: 1.1, tShell: 1.1, tRead: 1.5, tGrep: 0.8, tGlob: 0.35, tEdit: 0.35, tCreate: 0.02,
	tWebPage: 1.6, tWebSearch: 0.8, tTask: 4, tFinder: 1.5, tOracle: 1.4, tMCP: 0.8, tDeploy: 0.6,
	tPatch: 0.05,
}

type weighted struct {
	kinds []toolKind
	cum   []float64
	norm  float64 // weighted mean of toolMult, to normalise sizes
}

func newWeighted(w map[toolKind]float64) *weighted {
	t := &weighted{}
	total, m := 0.0, 0.0
	for k := range nTools {
		if x, ok := w[k]; ok {
			total += x
			m += x * toolMult[k]
			t.kinds = append(t.kinds, k)
			t.cum = append(t.cum, total)
		}
	}
	for i := range t.cum {
		t.cum[i] /= total
	}
	t.norm = m / total
	return t
}

func (t *weighted) pick(r *rand.Rand) toolKind {
	u := r.Float64()
	for i, c := range t.cum {
		if u < c {
			return t.kinds[i]
		}
	}
	return t.kinds[len(t.kinds)-1]
}

var (
	anthropicTools = newWeighted(map[toolKind]float64{
		tBash: 26, tRead: 24, tGrep: 14, tGlob: 8, tEdit: 14, tCreate: 4, tWebPage: 2,
		tWebSearch: 2, tTask: 2.5, tFinder: 4, tOracle: 1.5, tMCP: 1, tDeploy: 0.6,
	})
	deepTools = newWeighted(map[toolKind]float64{
		tShell: 62, tPatch: 24, tWebSearch: 5, tWebPage: 5,
	})
	subagentTools = newWeighted(map[toolKind]float64{
		tBash: 25, tRead: 35, tGrep: 20, tGlob: 10, tEdit: 8, tCreate: 2,
	})
)

type modelInfo struct {
	name                        string
	maxInput                    int64
	openai                      bool
	in, out, cacheWrite, cacheR float64 // USD per million tokens
}

var (
	mOpus46  = &modelInfo{"claude-opus-4-6", 168000, false, 5, 25, 6.25, 0.5}
	mOpus45  = &modelInfo{"claude-opus-4-5-20251101", 168000, false, 5, 25, 6.25, 0.5}
	mSonnet  = &modelInfo{"claude-sonnet-4-5-20250929", 168000, false, 3, 15, 3.75, 0.3}
	mSonnet1 = &modelInfo{"claude-sonnet-4-5-20250929", 968000, false, 3, 15, 3.75, 0.3}
	mHaiku   = &modelInfo{"claude-haiku-4-5-20251001", 168000, false, 1, 5, 1.25, 0.1}
	mCodex   = &modelInfo{"gpt-5.2-codex", 272000, true, 1.75, 14, 1.75, 0.175}
)

// clientVersions are CLI builds of the local-thread-file era; the build time
// is the number after "0.0.".
var clientVersions = []string{
	"0.0.1767802531-g0c1e2f",
	"0.0.1768018268-gcd18ba",
	"0.0.1768873900-g4a09d1",
	"0.0.1769521377-g7f3b0e",
	"0.0.1770734955-g93e689",
	"0.0.1771340068-gb21c54",
	"0.0.1772119342-g05dd7a",
	"0.0.1773097215-g6e4f81",
	"0.0.1774569934-g39e3ec",
}

type ledgerEvent struct {
	fromID, toID int64
	ms           int64
	model        string
	in, out      int64
	credits      float64
	title        bool
}

type usage struct {
	model                                  string
	maxIn, in, out, cacheCreate, cacheRead int64
	total                                  int64
	ms                                     int64
}

type project struct {
	name, org, branch, sha string
	os, osVersion, arch    string
	home                   string // absolute, in the OS's syntax
	root                   string // absolute project path
	uri                    string
	lang                   int
	files                  []string // relative, slash-separated
	windows                bool
}

type tgen struct {
	r      *rand.Rand
	w      *jw
	nested bool

	id       string
	created  int64
	target   int
	base     int // offset of the body in w.b
	mode     string
	model    *modelInfo
	tools    *weighted
	ledger   bool
	share    float64 // set point of the tool-result share (the result lands ~3 points lower)
	meanTool float64
	proj     *project

	now       int64 // clock, epoch ms
	lastInfer int64
	msgID     int64
	nAssist   int
	nTool     int
	ctx       int64 // context tokens so far
	cached    int64 // tokens cached by the previous inference
	sysTokens int64
	toolBytes int
	phi, psi  float64 // multipliers of tool-result and other sizes, see steer
	lim       int     // budget for the other content of one message
	models    []string
	events    []ledgerEvent
	last      usage // max-merged, for ~debug.lastInferenceUsage
	inferLog  []usage
	remote    remote            // the first tree's repository (repositories.go)
	spent     map[string]Tokens // by model, from tally
}

func newThread(g *Generator, i, target int, buf []byte) *tgen {
	r := g.rng(i, 0)
	t := &tgen{
		r:       r,
		w:       &jw{b: buf},
		id:      g.threadID(i),
		created: g.createdMs(i),
		target:  target,
	}
	t.ledger = r.IntN(20) == 0
	switch u := r.Float64(); {
	case u < 0.70:
		t.mode = "smart"
		t.model = mOpus46
		if t.ledger || r.IntN(3) == 0 {
			t.model = mOpus45
		}
	case u < 0.80:
		t.mode = "rush"
		t.model = mHaiku
	case u < 0.87:
		t.mode = "large"
		t.model = mSonnet1
	case u < 0.95:
		t.mode = "deep"
		t.model = mCodex
	default:
		t.mode = "free"
		t.model = mHaiku
	}
	t.tools = anthropicTools
	if t.model.openai {
		t.tools = deepTools
	}
	t.share = min(0.9, max(0.6, 0.78+0.05*r.NormFloat64()))
	t.meanTool = max(600, 3400*math.Pow(float64(target)/200e3, 0.4)) / t.tools.norm
	t.proj = newProject(r)
	t.remote = g.remote(i)
	t.sysTokens = 9000 + int64(r.IntN(9000))
	t.now = t.created + 500 + int64(r.IntN(4000))
	return t
}

func newProject(r *rand.Rand) *project {
	p := &project{
		name:   pick(r, projectNames),
		org:    pick(r, orgNames),
		branch: pick(r, branchNames),
		lang:   r.IntN(len(langFiles)),
	}
	p.sha = randHex(r, 40)
	user := pick(r, userNames)
	switch u := r.Float64(); {
	case u < 0.58:
		p.os, p.osVersion, p.arch = "linux", pick(r, []string{"6.8", "6.8.0-52-generic", "6.11.0-19-generic", "6.12.10-arch1-1"}), "x64"
		p.home = "/home/" + user
		p.root = p.home + "/" + pick(r, []string{"src", "code", "work", "projects"}) + "/" + p.name
		p.uri = "file://" + p.root
	case u < 0.93:
		p.os, p.osVersion, p.arch = "darwin", pick(r, []string{"24.6.0", "25.1.0", "24.3.0"}), "arm64"
		p.home = "/Users/" + user
		p.root = p.home + "/" + pick(r, []string{"src", "Developer", "code"}) + "/" + p.name
		p.uri = "file://" + p.root
	default:
		p.os, p.osVersion, p.arch, p.windows = "windows", "10.0.26100", "x64", true
		p.home = `C:\Users\` + user
		p.root = p.home + `\source\repos\` + p.name
		p.uri = "file:///c%3A/Users/" + user + "/source/repos/" + p.name
	}
	files := langFiles[p.lang]
	n := 8 + r.IntN(len(files)-8)
	p.files = make([]string, n)
	for i := range p.files {
		p.files[i] = files[r.IntN(len(files))]
	}
	return p
}

func (p *project) abs(rel string) string {
	if p.windows {
		b := []byte(p.root + `\` + rel)
		for i, c := range b {
			if c == '/' {
				b[i] = '\\'
			}
		}
		return string(b)
	}
	return p.root + "/" + rel
}

func (p *project) fileURI(rel string) string {
	return p.uri + "/" + rel
}

// est is the estimated size of the finished (sub)thread.
func (t *tgen) est() int {
	n := len(t.w.b) - t.base
	if t.nested {
		return n + 260*t.nAssist + 64
	}
	n += 930 + 380
	if t.ledger {
		n += 330 * (t.nAssist + 1)
	}
	return n
}

func (t *tgen) remaining() int { return t.target - t.est() }

// steer pulls the thread towards its planned tool-result share: when tool
// results are behind, the next ones are larger (phi) and the other content
// smaller (psi), and the other way round. lim keeps the other content of
// one message from overrunning the thread's size.
func (t *tgen) steer() {
	prior := 4 * t.meanTool
	now := (float64(t.toolBytes) + t.share*prior) / (float64(t.est()) + prior)
	d := t.share - now
	t.phi = min(6, max(0.2, math.Exp(12*d)))
	t.psi = min(8, max(0.4, math.Exp(-10*d)))
	t.lim = max(300, t.remaining()/3)
}

// other draws the size of a piece of content that is not a tool result,
// and takes it from lim.
func (t *tgen) other(median, s, limit float64) int {
	n := min(int(lognorm(t.r, median*t.psi, s)), int(limit*t.psi), max(40, t.lim))
	t.lim -= n
	return n
}

// body writes the messages and the trailer, leaving the writer at depth 0.
// The header is written separately, by header.
func (t *tgen) body() {
	w := t.w
	w.depth = 1
	w.cnt[1] = 7 // the header's members come before
	t.base = len(w.b)
	w.kArr("messages")
	t.conversation()
	w.endArr()
	if t.ledger {
		t.writeLedger()
	}
	w.kObj("~debug")
	w.key("lastInferenceUsage")
	t.writeUsage(t.last)
	w.endObj()
	w.endObj()
}

// conversation writes exchanges (prompt, tool cycles, answer) into the open
// messages array until the (sub)thread reaches its target size.
func (t *tgen) conversation() {
	r := t.r
	cycleMin := int(t.meanTool) + 2500
	exchangeMin := cycleMin + 3500
	for ex := 0; ; ex++ {
		t.prompt(ex)
		nc := 1 + int(r.ExpFloat64()*6)
		if r.IntN(10) == 0 {
			nc = 0
		}
		if t.nested {
			nc = 2 + r.IntN(8)
		}
		cancelled := false
		for c := 0; c < nc && t.remaining() > cycleMin && !cancelled; c++ {
			cancelled = !t.toolCycle()
		}
		last := t.remaining() < exchangeMin || t.nested
		if cancelled && !last {
			// The user interrupted the turn: the carrier of the cancelled
			// results is followed by the next prompt.
			continue
		}
		t.answer(last)
		if last {
			return
		}
	}
}

func (t *tgen) header(b []byte) []byte {
	w := &jw{b: b}
	w.obj()
	nMsg := t.msgID
	w.kInt("v", nMsg*3+int64(t.nTool)*2+int64(t.r.IntN(40))+5)
	w.kStr("id", t.id)
	w.kInt("created", t.created)
	w.kStr("title", t.title())
	w.kStr("agentMode", t.mode)
	w.kInt("nextMessageId", nMsg)
	w.kObj("env")
	w.kObj("initial")
	w.kArr("trees")
	w.eObj()
	p := t.proj
	w.kStr("displayName", p.name)
	w.kStr("uri", p.uri)
	t.writeRepository(w)
	w.endObj()
	w.endArr()
	w.kObj("platform")
	w.kStr("os", p.os)
	w.kStr("osVersion", p.osVersion)
	w.kStr("cpuArchitecture", p.arch)
	w.kBool("webBrowser", false)
	w.kStr("client", "CLI")
	w.kStr("clientVersion", t.clientVersion())
	w.kStr("clientType", "cli")
	w.endObj()
	w.kArr("tags")
	for _, m := range t.models {
		w.eStr("model:" + m)
	}
	w.endArr()
	w.endObj()
	w.endObj()
	return w.b
}

func (t *tgen) title() string {
	r := t.r
	s := pick(r, titles)
	if r.IntN(4) == 0 {
		s += " in " + t.proj.files[r.IntN(len(t.proj.files))]
	}
	return s
}

func (t *tgen) clientVersion() string {
	sec := t.created / 1000
	best := 0
	for i, v := range clientVersions {
		b, _ := strconv.ParseInt(v[4:14], 10, 64)
		if b <= sec {
			best = i
		}
	}
	if t.ledger {
		best = min(best, 1)
	} else if best > 0 && t.r.IntN(3) == 0 {
		best--
	}
	return clientVersions[best]
}

func (t *tgen) useModel(m string) {
	for _, x := range t.models {
		if x == m {
			return
		}
	}
	t.models = append(t.models, m)
}

// ---------------------------------------------------------------------------
// Messages.

func (t *tgen) prompt(ex int) {
	w, r := t.w, t.r
	if ex > 0 {
		// Time to read the answer and type; sometimes a coffee, a meeting
		// or the next morning.
		switch u := r.Float64(); {
		case u < 0.7:
			t.now += 15_000 + int64(r.IntN(240_000))
		case u < 0.95:
			t.now += 300_000 + int64(r.IntN(3_000_000))
		default:
			t.now += 3_600_000 + int64(r.IntN(60_000_000))
		}
	}
	t.steer()
	start := len(w.b)
	imgBytes := 0
	w.eObj()
	w.kStr("role", "user")
	w.kInt("messageId", t.msgID)
	w.kArr("content")
	w.eObj()
	w.kStr("type", "text")
	w.kBegin("text")
	t.promptText()
	w.strEnd()
	w.endObj()
	// A screenshot, sized from 50 kB to 3 MB but never more than a tenth
	// of the thread.
	if !t.nested && r.Float64() < t.psi/16 {
		size := int(50e3 * math.Exp(r.Float64()*math.Log(60)))
		size = min(size, t.target/10, t.remaining()/3)
		if size >= 50e3 {
			w.eObj()
			w.kStr("type", "image")
			w.kObj("source")
			w.kStr("type", "base64")
			mt := pick(r, []string{"image/png", "image/png", "image/png", "image/jpeg", "image/webp"})
			w.kStr("mediaType", mt)
			w.kBegin("data")
			t.base64Image(size, mt)
			w.strEnd()
			w.endObj()
			w.endObj()
			imgBytes = size
		}
	}
	w.endArr()
	w.kStr("agentMode", t.mode)
	w.kObj("meta")
	w.kInt("sentAt", t.now)
	w.endObj()
	w.endObj()
	t.msgID++
	t.ctx += int64(len(w.b)-start-imgBytes)/4 + int64(imgBytes/50e3*200)
}

func (t *tgen) promptText() {
	r := t.r
	t.fill(poolPrompt, max(20, t.other(260, 1.0, 6000)))
	if r.IntN(12) == 0 {
		// A pasted log or stack trace.
		t.w.b = append(t.w.b, "\\n\\n```\\n"...)
		t.fill(shellPools[r.IntN(len(shellPools))], t.other(3000, 0.9, 40e3))
		t.w.b = append(t.w.b, "```"...)
	}
}

type call struct {
	kind   toolKind
	id     string
	size   int // planned result bytes
	rel    string
	status string
	image  bool
}

// toolCycle writes an assistant message with tool calls and the user
// message carrying their results. It reports false when the user cancelled
// the turn.
func (t *tgen) toolCycle() bool {
	r := t.r
	n := 1
	switch u := r.Float64(); {
	case u < 0.08:
		n = 2
	case u < 0.13:
		n = 3
	case u < 0.15:
		n = 4
	}
	n = max(1, min(n, t.remaining()/5000))
	cancelled := !t.nested && r.IntN(60) == 0
	calls := make([]call, n)
	t.steer()
	for k := range calls {
		c := &calls[k]
		c.kind = t.tools.pick(r)
		if t.nested {
			c.kind = subagentTools.pick(r)
		}
		if c.kind == tTask && t.target < 60e3 {
			c.kind = tRead
		}
		c.id = t.toolUseID()
		c.rel = t.proj.files[r.IntN(len(t.proj.files))]
		size := t.meanTool * toolMult[c.kind] * t.phi * lognorm(r, 1, 1.25) / math.Exp(1.25*1.25/2)
		if t.target > 4e6 && r.IntN(100) == 0 {
			// Monster threads have a few huge outputs: a whole build
			// log, a data file, a big screenshot.
			size = 400e3 * math.Exp(r.Float64()*math.Log(10))
			switch {
			case t.model.openai:
				c.kind = tShell
			case r.IntN(2) == 0:
				c.kind = tBash
			default:
				c.kind = tRead
			}
		}
		c.size = int(size)
		c.status = "done"
		switch u := r.Float64(); {
		case cancelled:
			c.status = "cancelled"
		case u < 0.05:
			c.status = "error"
		case u < 0.07:
			c.status = "rejected-by-user"
		}
		if c.kind == tRead && c.size > 20e3 && r.IntN(25) == 0 {
			c.image = true
			c.size = min(c.size, 3e6)
		}
	}
	t.assistant(calls, cancelled)
	room := t.remaining() - 300*n - 1600
	for k := range calls {
		calls[k].size = max(120, min(calls[k].size, room/n))
	}
	t.results(calls)
	return !cancelled
}

func (t *tgen) toolUseID() string {
	if t.model.openai {
		return "toolu_" + uuid4(t.r)
	}
	return "toolu_01" + randAlnum(t.r, 22)
}

// assistant writes an assistant message: optional thinking and text, then
// the tool calls (none for a final answer).
func (t *tgen) assistant(calls []call, cancelled bool) {
	t.assistantMsg(calls, cancelled, false)
}

func (t *tgen) answer(last bool) {
	t.steer()
	t.assistantMsg(nil, false, last)
}

func (t *tgen) assistantMsg(calls []call, cancelled, last bool) {
	w, r := t.w, t.r
	start := len(w.b)
	w.eObj()
	w.kStr("role", "assistant")
	w.kInt("messageId", t.msgID)
	w.kArr("content")
	outBytes := 0
	if r.IntN(4) != 0 {
		w.eObj()
		w.kStr("type", "thinking")
		w.kBegin("thinking")
		s := len(w.b)
		t.fillProse(poolThinking, t.other(380, 0.9, 9000))
		outBytes += len(w.b) - s
		w.strEnd()
		if !t.model.openai {
			w.kBegin("signature")
			t.base64Raw(4 * int(lognorm(r, 90, 0.45)))
			w.strEnd()
			w.kStr("provider", "anthropic")
		} else {
			w.kStr("provider", "openai")
		}
		w.endObj()
	}
	final := calls == nil
	if final || r.IntN(2) == 0 {
		w.eObj()
		w.kStr("type", "text")
		w.kBegin("text")
		s := len(w.b)
		switch {
		case final && last:
			// The last answer fills what is left of the thread's budget.
			n := t.remaining() - 450
			t.fillMarkdown(max(160, min(n, 40_000)))
		case final:
			t.fillMarkdown(t.other(850, 0.8, 12_000))
		default:
			t.fillProse(poolText, t.other(140, 0.8, 2000))
		}
		outBytes += len(w.b) - s
		w.strEnd()
		w.endObj()
	}
	for i := range calls {
		s := len(w.b)
		t.toolUse(&calls[i])
		outBytes += len(w.b) - s
	}
	w.endArr()
	// The inference: output tokens from the content, input from the
	// context so far.
	out := int64(outBytes)/4 + 20 + int64(r.IntN(200))
	u := t.inference(out)
	t.tally(u)
	w.kObj("state")
	switch {
	case cancelled:
		w.kStr("type", "cancelled")
	case final:
		w.kStr("type", "complete")
		w.kStr("stopReason", "end_turn")
	default:
		w.kStr("type", "complete")
		w.kStr("stopReason", "tool_use")
	}
	w.endObj()
	w.key("usage")
	t.writeUsage(u)
	w.endObj()
	if t.ledger && !t.nested {
		t.events = append(t.events, ledgerEvent{
			fromID: t.msgID - 1, toID: t.msgID, ms: u.ms, model: u.model,
			in: u.in, out: u.out, credits: t.credits(u),
		})
		if t.nAssist == 0 && r.IntN(3) != 0 {
			t.events = append(t.events, ledgerEvent{
				fromID: 0, ms: u.ms + 800 + int64(r.IntN(2000)), model: mHaiku.name,
				in: 300 + int64(r.IntN(700)), out: 6 + int64(r.IntN(14)), title: true,
			})
			e := &t.events[len(t.events)-1]
			e.credits = round4((float64(e.in)*mHaiku.in + float64(e.out)*mHaiku.out) / 1e6)
		}
	}
	t.msgID++
	t.nAssist++
	t.ctx += int64(len(w.b)-start) / 5
}

// inference advances the clock by the time an inference takes and returns
// its usage, with the context growing through the thread and the prompt
// cache warm while turns follow each other within five minutes.
func (t *tgen) inference(out int64) usage {
	r := t.r
	m := t.model
	if t.nested {
		m = mSonnet
		if t.model.openai {
			m = mCodex
		}
	}
	t.now += 1500 + int64(r.IntN(3000)) + out*1000/int64(40+r.IntN(80))
	total := t.sysTokens + t.ctx
	limit := m.maxInput * 95 / 100
	if total > limit {
		// A full context: what the model sees is truncated, it stops
		// growing.
		total = limit - int64(r.IntN(4000))
	}
	cached := t.cached
	if t.lastInfer == 0 || t.now-t.lastInfer > 5*60_000 {
		cached = 0
		if r.IntN(3) != 0 {
			cached = t.sysTokens // the system prompt and tools, shared across threads
		}
	}
	cached = min(cached, total-100-int64(r.IntN(3000)))
	u := usage{model: m.name, maxIn: m.maxInput, out: out, total: total, ms: t.now}
	if m.openai {
		cached = cached / 128 * 128
		u.cacheRead = cached
		u.cacheCreate = total - cached
	} else {
		u.in = min(int64(1+r.IntN(12)), total-cached)
		u.cacheRead = cached
		u.cacheCreate = total - cached - u.in
	}
	t.cached = total
	t.lastInfer = t.now
	if t.nested {
		t.inferLog = append(t.inferLog, u)
		return u
	}
	t.useModel(m.name)
	l := &t.last
	l.model = u.model
	l.maxIn = max(l.maxIn, u.maxIn)
	l.in = max(l.in, u.in)
	l.out = max(l.out, u.out)
	l.cacheCreate = max(l.cacheCreate, u.cacheCreate)
	l.cacheRead = max(l.cacheRead, u.cacheRead)
	l.total = max(l.total, u.total)
	l.ms = max(l.ms, u.ms)
	return u
}

func (t *tgen) credits(u usage) float64 {
	m := t.model
	c := float64(u.in)*m.in + float64(u.out)*m.out + float64(u.cacheCreate)*m.cacheWrite + float64(u.cacheRead)*m.cacheR
	return round4(c / 1e6)
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func (t *tgen) writeUsage(u usage) {
	w := t.w
	w.obj()
	w.kStr("model", u.model)
	w.kInt("maxInputTokens", u.maxIn)
	w.kInt("inputTokens", u.in)
	w.kInt("outputTokens", u.out)
	w.kInt("cacheCreationInputTokens", u.cacheCreate)
	w.kInt("cacheReadInputTokens", u.cacheRead)
	w.kInt("totalInputTokens", u.total)
	w.key("timestamp")
	w.b = append(w.b, '"')
	w.b = time.UnixMilli(u.ms).UTC().AppendFormat(w.b, "2006-01-02T15:04:05.000Z")
	w.b = append(w.b, '"')
	w.endObj()
}

func (t *tgen) writeLedger() {
	w := t.w
	w.kObj("usageLedger")
	w.kArr("events")
	for _, e := range t.events {
		w.eObj()
		w.kStr("id", uuid4(t.r))
		w.key("timestamp")
		w.b = append(w.b, '"')
		w.b = time.UnixMilli(e.ms).UTC().AppendFormat(w.b, "2006-01-02T15:04:05Z")
		w.b = append(w.b, '"')
		w.kStr("model", e.model)
		w.kFloat("credits", e.credits)
		w.kObj("tokens")
		w.kInt("input", e.in)
		w.kInt("output", e.out)
		w.endObj()
		if e.title {
			w.kStr("operationType", "title-generation")
			w.kInt("fromMessageId", e.fromID)
		} else {
			w.kStr("operationType", "inference")
			w.kInt("fromMessageId", e.fromID)
			w.kInt("toMessageId", e.toID)
		}
		w.endObj()
	}
	w.endArr()
	w.endObj()
}

// toolUse writes a tool_use block with the tool's input.
func (t *tgen) toolUse(c *call) {
	w, r, p := t.w, t.r, t.proj
	w.eObj()
	w.kStr("type", "tool_use")
	w.kBool("complete", true)
	w.kStr("id", c.id)
	w.kStr("name", toolNames[c.kind])
	w.kObj("input")
	switch c.kind {
	case tBash:
		w.kStr("cmd", pick(r, commands[p.lang]))
		w.kStr("cwd", p.root)
	case tShell:
		w.kStr("command", pick(r, commands[p.lang]))
		w.kStr("workdir", p.root)
	case tRead:
		if c.image {
			c.rel = pick(r, []string{"docs/screenshot.png", "assets/logo.png", "tmp/failing-test.png", "design/mockup.png"})
		}
		w.kStr("path", p.abs(c.rel))
		if !c.image && r.IntN(3) == 0 {
			a := int64(1 + r.IntN(400))
			w.kArr("read_range")
			w.eInt(a)
			w.eInt(a + int64(20+r.IntN(300)))
			w.endArr()
		}
	case tGrep:
		w.kStr("pattern", pick(r, grepPatterns))
		w.kStr("path", p.root)
		if r.IntN(3) == 0 {
			w.kStr("glob", pick(r, globPatterns[p.lang]))
		}
		if r.IntN(4) == 0 {
			w.kBool("caseSensitive", false)
		}
	case tGlob:
		w.kStr("filePattern", pick(r, globPatterns[p.lang]))
		if r.IntN(3) == 0 {
			w.kInt("limit", 100)
		}
	case tEdit:
		w.kStr("path", p.abs(c.rel))
		w.kBegin("old_str")
		t.fillCode(p.lang, t.other(300, 0.9, 6000))
		w.strEnd()
		w.kBegin("new_str")
		t.fillCode(p.lang, t.other(420, 0.9, 8000))
		w.strEnd()
	case tCreate:
		w.kStr("path", p.abs(c.rel))
		w.kBegin("content")
		t.fillCode(p.lang, t.other(2500, 0.9, 40_000))
		w.strEnd()
	case tWebPage:
		w.kStr("url", pick(r, urls))
		if r.IntN(2) == 0 {
			w.kStr("objective", pick(r, objectives))
		}
	case tWebSearch:
		w.kStr("objective", pick(r, objectives))
		w.kArr("search_queries")
		for range 1 + r.IntN(3) {
			w.eStr(pick(r, searchQueries))
		}
		w.endArr()
	case tTask:
		w.kBegin("prompt")
		t.fillProse(poolText, t.other(900, 0.6, 6000))
		w.strEnd()
		w.kStr("description", pick(r, objectives))
	case tFinder:
		w.kStr("query", pick(r, objectives))
	case tOracle:
		w.kStr("task", pick(r, objectives))
		w.kBegin("context")
		t.fillProse(poolText, t.other(600, 0.6, 6000))
		w.strEnd()
		w.kArr("files")
		for range 1 + r.IntN(4) {
			w.eStr(p.abs(p.files[r.IntN(len(p.files))]))
		}
		w.endArr()
	case tMCP:
		w.kStr("query", "repo:"+p.org+"/"+p.name+" "+pick(r, funcNames))
	case tDeploy:
		w.kStr("environment", pick(r, []string{"staging", "staging", "preview", "production"}))
		w.kStr("service", pick(r, []string{"api", "web", "worker", "scheduler"}))
	case tPatch:
		w.kBegin("patchText")
		w.b = append(w.b, `*** Begin Patch\n*** Update File: `...)
		w.b = appendEscaped(w.b, p.abs(c.rel))
		w.b = append(w.b, `\n@@\n`...)
		t.fillDiff(p.lang, t.other(700, 0.8, 12_000))
		w.b = append(w.b, `*** End Patch`...)
		w.strEnd()
	}
	w.endObj()
	w.endObj()
}

// results writes the tool-result carrier for calls.
func (t *tgen) results(calls []call) {
	w, r := t.w, t.r
	t.now += 200 + int64(r.IntN(2500))
	w.eObj()
	w.kStr("role", "user")
	w.kInt("messageId", t.msgID)
	w.kArr("content")
	for i := range calls {
		c := &calls[i]
		start := len(w.b)
		w.eObj()
		w.kStr("type", "tool_result")
		w.kStr("toolUseID", c.id)
		w.kObj("run")
		w.kStr("status", c.status)
		switch c.status {
		case "done":
			t.result(c)
		case "error":
			w.kObj("error")
			w.kStr("message", pick(r, errorMessages))
			w.endObj()
			w.kEmpty("progress", "{}")
		case "cancelled":
			w.kStr("reason", pick(r, []string{"user cancelled", "Cancelled by user", "interrupted"}))
			w.kEmpty("progress", "{}")
		default: // rejected-by-user
			if r.IntN(2) == 0 {
				w.kStr("reason", pick(r, []string{"not now", "don't run that, use the make target", "wrong file"}))
			}
			w.kEmpty("progress", "{}")
		}
		w.endObj()
		w.endObj()
		n := len(w.b) - start
		t.toolBytes += n
		tok := int64(n / 4)
		if c.image {
			tok = 1600
		}
		t.ctx += min(tok, 25_000)
		t.nTool++
		// Running the tool takes time too.
		t.now += 100 + int64(r.IntN(4000))
		if c.kind == tTask || c.kind == tOracle {
			t.now += 20_000 + int64(r.IntN(200_000))
		}
	}
	w.endArr()
	w.endObj()
	t.msgID++
}

// result writes the result, progress and trackFiles of a done run, about
// c.size bytes in all.
func (t *tgen) result(c *call) {
	w, r, p := t.w, t.r, t.proj
	n := max(0, c.size-180)
	track := false
	switch c.kind {
	case tBash, tShell, tDeploy:
		w.kObj("result")
		w.kBegin("output")
		if c.kind == tDeploy {
			t.fill(poolDeploy, n)
		} else {
			t.fill(shellPools[r.IntN(len(shellPools))], n)
		}
		w.strEnd()
		code := int64(0)
		if r.IntN(6) == 0 {
			code = int64(pick(r, []int{1, 1, 1, 2, 124, 127, 130}))
		}
		w.kInt("exitCode", code)
		w.endObj()
	case tRead:
		w.kObj("result")
		w.kStr("absolutePath", p.abs(c.rel))
		w.kBegin("content")
		if c.image {
			t.base64Image(n, "image/png")
			w.strEnd()
			w.kBool("isImage", true)
			w.kObj("imageInfo")
			w.kStr("mimeType", "image/png")
			w.kInt("size", int64(n)/4*3)
			w.endObj()
		} else {
			t.fillNumberedCode(p.lang, n)
			w.strEnd()
		}
		w.endObj()
		track = true
	case tGrep:
		w.kArr("result")
		for s := len(w.b); len(w.b)-s < n; {
			w.sep()
			w.b = append(w.b, '"')
			w.b = appendEscaped(w.b, p.abs(p.files[r.IntN(len(p.files))]))
			w.b = append(w.b, ':')
			w.b = strconv.AppendInt(w.b, int64(1+r.IntN(900)), 10)
			w.b = append(w.b, ':')
			line := pick(r, codePools[p.lang].lines)
			w.b = append(w.b, line[:len(line)-2]...) // without its \n
			w.b = append(w.b, '"')
		}
		w.endArr()
	case tGlob:
		w.kArr("result")
		for s := len(w.b); len(w.b)-s < n; {
			w.eStr(p.abs(pick(r, langFiles[p.lang])))
		}
		w.endArr()
	case tEdit:
		w.kObj("result")
		w.kBegin("diff")
		w.b = append(w.b, "```diff\\nIndex: "...)
		w.b = appendEscaped(w.b, p.abs(c.rel))
		w.b = append(w.b, `\n===================================================================\n--- `...)
		w.b = appendEscaped(w.b, p.abs(c.rel))
		w.b = append(w.b, `\toriginal\n+++ `...)
		w.b = appendEscaped(w.b, p.abs(c.rel))
		a := int64(1 + r.IntN(500))
		b := a + int64(3+r.IntN(40))
		w.b = fmt.Appendf(w.b, `\tmodified\n@@ -%d,%d +%d,%d @@\n`, a, b-a, a, b-a+int64(r.IntN(6)))
		t.fillDiff(p.lang, n-200)
		w.b = append(w.b, "```"...)
		w.strEnd()
		w.kArr("lineRange")
		w.eInt(a)
		w.eInt(b)
		w.endArr()
		w.endObj()
		track = true
	case tCreate:
		w.kStr("result", "Successfully created file "+p.abs(c.rel))
		track = true
	case tPatch:
		w.kStr("result", "Done!\nM "+c.rel+"\n")
		track = true
	case tWebPage:
		w.kBegin("result")
		t.fillMarkdown(n)
		w.strEnd()
	case tWebSearch:
		w.kArr("result")
		for s := len(w.b); len(w.b)-s < n; {
			w.eObj()
			w.kStr("title", pick(r, titles))
			w.kStr("url", pick(r, urls))
			w.kBegin("content")
			t.fillMarkdown(min(n-(len(w.b)-s), 300+r.IntN(3000)))
			w.strEnd()
			w.endObj()
		}
		w.endArr()
	case tMCP:
		w.kArr("result")
		for s := len(w.b); len(w.b)-s < n; {
			w.eObj()
			w.kStr("type", "text")
			w.kBegin("text")
			t.fill(poolJSONText, min(n-(len(w.b)-s), 200+r.IntN(4000)))
			w.strEnd()
			w.endObj()
		}
		w.endArr()
	case tFinder:
		// The finder subagent's answer: files and snippets, then (for
		// larger runs) its conversation.
		s := len(w.b)
		m := n
		if n > 8000 {
			m = n / 4
		}
		w.kBegin("result")
		for s := len(w.b); len(w.b)-s < m; {
			w.b = appendEscaped(w.b, p.abs(p.files[r.IntN(len(p.files))]))
			w.b = append(w.b, "\\n```\\n"...)
			t.fillCode(p.lang, 200+r.IntN(1500))
			w.b = append(w.b, "```\\n\\n"...)
		}
		w.strEnd()
		if n > 8000 {
			w.kEmpty("progress", "[]")
			w.kObj("~debug")
			t.subagent(max(2000, n-(len(w.b)-s)))
			w.endObj()
			return
		}
	case tOracle, tTask:
		s := len(w.b)
		w.kBegin("result")
		t.fillMarkdown(min(n/6+200, 20_000))
		w.strEnd()
		w.kEmpty("progress", "[]")
		if n < 8000 {
			return
		}
		w.kObj("~debug")
		t.subagent(max(2000, n-(len(w.b)-s)))
		w.endObj()
		return
	}
	w.kEmpty("progress", "{}")
	if track {
		w.kArr("trackFiles")
		w.eStr(p.fileURI(c.rel))
		w.endArr()
	} else {
		w.kEmpty("trackFiles", "[]")
	}
}

// subagent writes the conversation and inferences of a subagent run into
// the open ~debug object, about size bytes.
func (t *tgen) subagent(size int) {
	w := t.w
	child := &tgen{
		r: t.r, w: w, nested: true,
		id: t.id, created: t.created, target: size,
		mode: t.mode, model: t.model, tools: subagentTools,
		share: t.share, meanTool: max(600, t.meanTool*0.8), proj: t.proj,
		now: t.now, sysTokens: 6000 + int64(t.r.IntN(4000)),
	}
	w.kArr("conversation")
	child.base = len(w.b)
	child.conversation()
	w.endArr()
	w.kArr("inferences")
	for _, u := range child.inferLog {
		w.eObj()
		w.kStr("id", "inf_"+randAlnum(t.r, 20))
		w.kStr("model", u.model)
		w.key("usage")
		child.writeUsage(u)
		w.endObj()
	}
	w.endArr()
	t.now = child.now
}

// ---------------------------------------------------------------------------
// Text.

// fill appends about n bytes of escaped lines from p: runs of consecutive
// lines starting at random places, so the text reads like real output.
func (t *tgen) fill(p *pool, n int) {
	w, r := t.w, t.r
	end := len(w.b) + n
	lines := p.lines
	for len(w.b) < end {
		j := r.IntN(len(lines))
		run := 4 + r.IntN(28)
		for ; run > 0 && len(w.b) < end; run-- {
			w.b = append(w.b, lines[j]...)
			j++
			if j == len(lines) {
				j = 0
			}
		}
	}
}

// fillProse appends about n bytes of prose without a trailing newline.
func (t *tgen) fillProse(p *pool, n int) {
	w, r := t.w, t.r
	end := len(w.b) + n
	for len(w.b) < end {
		w.b = append(w.b, p.lines[r.IntN(len(p.lines))]...)
	}
	for len(w.b) >= 2 && w.b[len(w.b)-2] == '\\' && w.b[len(w.b)-1] == 'n' {
		w.b = w.b[:len(w.b)-2]
	}
	if len(w.b) > 0 && w.b[len(w.b)-1] == ' ' {
		w.b = w.b[:len(w.b)-1]
	}
}

func (t *tgen) fillMarkdown(n int) { t.fill(poolMarkdown, n) }

func (t *tgen) fillCode(lang, n int) { t.fill(codePools[lang], n) }

func (t *tgen) fillNumberedCode(lang, n int) {
	w, r := t.w, t.r
	lines := codePools[lang].lines
	end := len(w.b) + n
	j := r.IntN(len(lines))
	for ln := int64(1); len(w.b) < end; ln++ {
		w.b = strconv.AppendInt(w.b, ln, 10)
		w.b = append(w.b, ':', ' ')
		w.b = append(w.b, lines[j]...)
		j++
		if j == len(lines) {
			j = 0
		}
	}
}

func (t *tgen) fillDiff(lang, n int) {
	w, r := t.w, t.r
	lines := codePools[lang].lines
	end := len(w.b) + n
	j := r.IntN(len(lines))
	for len(w.b) < end {
		switch u := r.IntN(10); {
		case u < 6:
			w.b = append(w.b, ' ')
		case u < 8:
			w.b = append(w.b, '-')
		default:
			w.b = append(w.b, '+')
		}
		w.b = append(w.b, lines[j]...)
		j++
		if j == len(lines) {
			j = 0
		}
	}
}

// base64Raw appends n bytes of base64 text.
func (t *tgen) base64Raw(n int) {
	w, r := t.w, t.r
	for n > 0 {
		off := r.IntN(len(b64Pool)/4) * 4
		k := min(n, len(b64Pool)-off)
		w.b = append(w.b, b64Pool[off:off+k]...)
		n -= k
	}
}

// base64Image appends about n bytes of base64 that starts like an image of
// type mt and is valid base64 (a multiple of four characters).
func (t *tgen) base64Image(n int, mt string) {
	prefix := "iVBORw0KGgoAAAANSUhEUgAA"
	switch mt {
	case "image/jpeg":
		prefix = "/9j/4AAQSkZJRgABAQAAAQAB"
	case "image/webp":
		prefix = "UklGRiQAAABXRUJQVlA4IBgA"
	}
	t.w.b = append(t.w.b, prefix...)
	t.base64Raw(max(4, (n-len(prefix))/4*4))
}

// ---------------------------------------------------------------------------
// Helpers.

func lognorm(r *rand.Rand, median, s float64) float64 {
	return median * math.Exp(s*r.NormFloat64())
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

const hexDigits = "0123456789abcdef"

func randHex(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = hexDigits[r.IntN(16)]
	}
	return string(b)
}

func randAlnum(r *rand.Rand, n int) string {
	const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = a[r.IntN(len(a))]
	}
	return string(b)
}

// uuid7 formats a UUIDv7: 48 bits of ms, version 7, 12 random bits, the
// RFC 4122 variant and 62 random bits, in lower case.
func uuid7(ms int64, r *rand.Rand) string {
	var u [16]byte
	m := uint64(ms)
	for i := range 6 {
		u[i] = byte(m >> (40 - 8*i))
	}
	x, y := r.Uint64(), r.Uint64()
	u[6] = 0x70 | byte(x>>60)&0x0f
	u[7] = byte(x >> 52)
	u[8] = 0x80 | byte(y>>58)&0x3f
	for i := 9; i < 16; i++ {
		u[i] = byte(y >> (8 * (15 - i)))
	}
	return formatUUID(u)
}

func uuid4(r *rand.Rand) string {
	var u [16]byte
	x, y := r.Uint64(), r.Uint64()
	for i := range 8 {
		u[i] = byte(x >> (8 * i))
		u[8+i] = byte(y >> (8 * i))
	}
	u[6] = 0x40 | u[6]&0x0f
	u[8] = 0x80 | u[8]&0x3f
	return formatUUID(u)
}

func formatUUID(u [16]byte) string {
	b := make([]byte, 0, 36)
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[c>>4], hexDigits[c&15])
	}
	return string(b)
}

// feistel is a keyed permutation of [0, n): it maps a thread index to its
// size rank without generating or storing the whole permutation.
type feistel struct {
	n    uint64
	half uint
	mask uint64
	keys [4]uint64
}

func newFeistel(n, seed uint64) feistel {
	b := uint(bits.Len64(max(n, 1) - 1))
	half := max(1, (b+1)/2)
	f := feistel{n: n, half: half, mask: 1<<half - 1}
	for i := range f.keys {
		seed = splitmix(seed + uint64(i))
		f.keys[i] = seed
	}
	return f
}

func (f feistel) at(i uint64) uint64 {
	x := i
	for {
		l, r := x>>f.half, x&f.mask
		for _, k := range f.keys {
			l, r = r, l^(splitmix(r^k)&f.mask)
		}
		x = l<<f.half | r
		if x < f.n {
			return x
		}
	}
}

// ---------------------------------------------------------------------------
// Text pools. Built once, from a fixed seed, out of templates whose «slots»
// are filled at random; stored already escaped, one line (with its escaped
// newline) per entry, so that generating text is copying.

type pool struct{ lines []string }

const (
	langGo = iota
	langTS
	langPy
	langRust
)

var (
	projectNames  = []string{"amp-exporter", "billing-service", "web-dashboard", "infra", "mobile-app", "ml-pipeline", "docs-site", "api-gateway", "data-loader", "cli-tools", "search-indexer", "auth-proxy"}
	orgNames      = []string{"acme", "globex", "initech", "umbrella-labs", "hooli", "stark-ind"}
	branchNames   = []string{"main", "main", "main", "dev", "feat/retry-backoff", "fix/ws-reconnect", "renovate/go-1.26", "jd/refactor-store", "release/2.4"}
	userNames     = []string{"dev", "alice", "bob", "jdoe", "mkowalski", "sato", "lmüller"}
	funcNames     = []string{"handleRequest", "parseConfig", "NewServer", "retryWithBackoff", "validateToken", "loadThreads", "flushQueue", "applyDelta", "resolvePath", "encodeFrame", "newCollector", "scanDir", "computeCost", "mergeUsage", "renderTemplate", "openDB", "migrate", "watchLoop", "shutdown", "buildIndex"}
	idents        = []string{"ctx", "cfg", "retryCount", "maxBackoff", "req", "resp", "buf", "threadID", "opts", "logger", "deadline", "cacheKey", "tokenTTL", "rows", "err", "userID", "payload", "window", "offset", "limit"}
	typeNames     = []string{"Server", "Config", "Thread", "Usage", "Collector", "Store", "Event", "Options", "Client", "Watcher", "Ledger", "Snapshot"}
	phrases       = []string{"connection reset by peer", "invalid character 'x' in string escape code", "expected 3 rows, got 2", "user not found", "Größe überschritten", "timeout after 30s", "ошибка авторизации", "ファイルが見つかりません", "无效的参数", "unexpected EOF", "it's \"quoted\"", "tab\tseparated", "naïve café", "done ✓", "50% → 75%", "permission denied", "context deadline exceeded", "🚀 shipped", "retry limit reached", "a\\b"}
	errorMessages = []string{
		"Command timed out after 120 seconds",
		"ENOENT: no such file or directory, open '/home/dev/proj/src/missing.ts'",
		"File is too large to read (4.2 MB). Use read_range to read a part of it.",
		"old_str not found in file. Make sure it matches exactly, including whitespace.",
		"Error: fetch failed: getaddrinfo ENOTFOUND internal.example.com",
		"Tool execution failed: MCP server \"github\" disconnected",
		"Path C:\\Users\\dev\\proj\\bin is outside the workspace",
		"Permission denied: \"rm -rf build/\" requires confirmation",
		"rate limited (429): retry after 20s",
	}
	titles = []string{
		"Fix flaky retry test in scheduler", "Add exponential backoff to webhook client", "Investigate memory leak in watcher",
		"Refactor config loading", "Migrate CI to GitHub Actions", "Rename \"ctx\" parameter across handlers",
		"Übersetzung der Fehlermeldungen", "Debug Windows path handling (C:\\Users)", "Speed up JSON decoding",
		"Implement SSE reconnect with Last-Event-Id", "Write tests for the pricing table", "Why does the build fail on arm64?",
		"Set up Prometheus alerts", "ログ出力の修正", "Clean up unused dependencies", "Add dark mode toggle 🌙",
		"Review PR #482: cache invalidation", "Port the CLI to Rust", "Fix off-by-one in pagination", "Upgrade to React 19",
	}
	urls = []string{
		"https://pkg.go.dev/github.com/prometheus/client_golang/prometheus", "https://docs.rs/tokio/latest/tokio/",
		"https://developer.mozilla.org/en-US/docs/Web/API/EventSource", "https://github.com/acme/proj/issues/482",
		"https://ampcode.com/manual", "https://stackoverflow.com/questions/11227809/why-is-processing-a-sorted-array-faster",
		"https://prometheus.io/docs/practices/naming/", "https://www.rfc-editor.org/rfc/rfc9562.html",
		"https://docs.python.org/3/library/asyncio-task.html", "https://react.dev/reference/react/useEffect",
	}
	objectives = []string{
		"Find where the retry limit is configured", "How is the thread file written to disk?", "Explain the cache invalidation logic",
		"Find all callers of the deprecated API", "Check the recommended metric naming", "Summarize the breaking changes in v2",
		"Locate the code that parses usage tokens", "Find tests that cover Windows paths", "Review the diff for concurrency bugs",
	}
	searchQueries = []string{"prometheus counter naming convention", "go fsnotify rename event linux", "tokio select cancel safety", "react 19 useEffect cleanup", "sse last-event-id reconnect", "anthropic prompt caching ttl"}
	grepPatterns  = []string{`func \(s \*Server\) \w+`, `TODO|FIXME`, `\bretry(Count|Limit)\b`, `"C:\\\\Users`, `panic\(`, `^import .* from ['"]react['"]`, `\\d\{4\}-\\d\{2\}`, `unwrap\(\)`, `def test_\w+`, `cacheReadInputTokens`}
)

var langFiles = [4][]string{
	langGo:   {"cmd/server/main.go", "internal/store/store.go", "internal/store/store_test.go", "internal/watch/watcher.go", "internal/watch/poll.go", "pkg/scheduler/retry.go", "pkg/scheduler/retry_test.go", "parser/thread/thread.go", "parser/thread/summary.go", "collector/collector.go", "collector/metrics.go", "internal/config/config.go", "internal/config/config_test.go", "go.mod", "Makefile", "README.md", "internal/sse/client.go", "internal/sse/frame.go", "internal/pricing/table.go", "docs/architecture.md"},
	langTS:   {"src/index.ts", "src/components/Button.tsx", "src/components/ThreadList.tsx", "src/lib/api.ts", "src/lib/api.test.ts", "src/hooks/useThreads.ts", "src/routes/settings.tsx", "src/utils/format.ts", "src/utils/format.test.ts", "package.json", "tsconfig.json", "vite.config.ts", "README.md", "src/server/handler.ts", "src/server/db.ts", "src/styles/theme.css", "docs/setup.md", "src/lib/retry.ts"},
	langPy:   {"app/main.py", "app/models/user.py", "app/models/thread.py", "app/api/routes.py", "app/services/billing.py", "app/utils/retry.py", "tests/test_api.py", "tests/test_billing.py", "tests/conftest.py", "pyproject.toml", "README.md", "scripts/migrate.py", "app/config.py", "app/workers/queue.py", "notebooks/analysis.ipynb", "docs/index.md"},
	langRust: {"src/main.rs", "src/lib.rs", "src/config.rs", "src/store/mod.rs", "src/store/sqlite.rs", "src/watch.rs", "src/parse/thread.rs", "src/parse/usage.rs", "crates/core/src/lib.rs", "crates/core/src/error.rs", "tests/integration.rs", "Cargo.toml", "README.md", "benches/decode.rs", "src/bin/cli.rs", "build.rs"},
}

var commands = [4][]string{
	langGo:   {"go test ./...", "go test ./pkg/scheduler/ -run 'TestRetry/with_jitter' -count=1 -v", "go build ./... && go vet ./...", "golangci-lint run ./...", "git status && git diff --stat", "rg -n \"panic\\(\" --glob '*.go'", "go test -race ./internal/... 2>&1 | tail -50", "ls -la internal/store", "git log --oneline -20", "make lint test"},
	langTS:   {"npm test", "npm run build", "npx tsc --noEmit", "pnpm vitest run src/lib/api.test.ts", "npx eslint src --ext .ts,.tsx", "git status", "ls -la src/components", "npm install zod@latest", "grep -rn \"useEffect\" src/ | head -30", "docker compose logs api --tail 200"},
	langPy:   {"pytest -x -q", "pytest tests/test_billing.py -k 'test_credits and not slow' -vv", "python -m mypy app", "ruff check .", "uv pip install -r requirements.txt", "git diff HEAD~1", "python scripts/migrate.py --dry-run", "ls -la app/models", "tail -n 200 logs/worker.log", "python -c \"import json,sys; print(json.load(open('data.json'))['items'][0])\""},
	langRust: {"cargo build", "cargo test -- --nocapture", "cargo clippy --all-targets -- -D warnings", "cargo test parse::usage -- --exact", "git status", "cargo fmt --check", "ls -la src/store", "RUST_BACKTRACE=1 cargo run -- --dir ./fixtures", "cargo bench --bench decode", "git log -p -1 -- src/watch.rs"},
}

var globPatterns = [4][]string{
	langGo:   {"**/*.go", "**/*_test.go", "internal/**/*.go", "**/testdata/*.json"},
	langTS:   {"src/**/*.tsx", "**/*.test.ts", "src/**/*.{ts,tsx}", "**/package.json"},
	langPy:   {"**/*.py", "tests/**/test_*.py", "app/**/*.py", "**/*.toml"},
	langRust: {"src/**/*.rs", "**/Cargo.toml", "tests/*.rs", "crates/*/src/**/*.rs"},
}

var (
	proseThinking = []string{
		"Let me look at how «f» handles the error path in «F».",
		"The test fails because «f» returns early when the context is cancelled, so «I» is never incremented.",
		"I should check whether `«I»` is set before «f» is called.",
		"Looking at the output, the failure is in «F»:«N» — expected \"«S»\" but got \"«S»\".",
		"The user wants this fixed without changing the public API, so I'll keep the signature of «f».",
		"Hmm, the regex `^\\d{4}-\\d{2}-\\d{2}T` doesn't match a timestamp with a trailing Z.",
		"On Windows the path would be `C:\\Users\\dev\\«P»\\«F»`, so I need filepath.Join instead of string concatenation.",
		"The error message says “«S»”, which comes from the localized strings.",
		"Wait — «T».«f» holds the lock while calling out to the network. That's the deadlock.",
		"I'll read «F» first, then run the tests to confirm the failure before changing anything.",
		"There are «N» callers of «f»; only two of them pass a nil «I».",
		"The JSON in the fixture has escaped quotes (\\\"), so the parser must unescape before comparing.",
		"So the sequence is: «f» → «f» → «f». The second call races with the first.",
		"Actually, simpler: move the check into «f» and return «E» from there.",
		"Tests pass now. I should also run the linter and check the Windows build.",
		"«u»",
		"The benchmark shows «N» ns/op before and «N» ns/op after, which is within noise.",
		"I need to be careful: «I» is shared between goroutines.",
	}
	proseText = []string{
		"I'll update «f» to handle the nil case.",
		"Running the tests now.",
		"Found it: «F»:«N» uses `«I»` before it is initialised.",
		"Let me check the other callers of «f».",
		"The build passes; now the tests.",
		"I'll read «F» to see how «T» is constructed.",
		"That failed with “«S»” — trying a different approach.",
		"Now I'll add a regression test in «F».",
		"Searching for usages of `«I»` across the repo.",
		"«u»",
	}
	prosePrompt = []string{
		"fix the failing test in «F»",
		"why does «f» panic when the config is empty?",
		"can you add retries to «f»? use exponential backoff with jitter, max «N» attempts",
		"Übersetze bitte die Fehlermeldungen in «F» ins Deutsche.",
		"このテストが失敗する理由を調べてください: «F»",
		"the build fails on windows with `C:\\Users\\dev\\«P»\\«F»: access denied`",
		"rename «I» to something clearer everywhere, and update the docs",
		"run the tests and fix whatever is broken",
		"look at the last commit, does it introduce a race?",
		"ok, now commit this with a good message",
		"make «f» return an error instead of logging \"«S»\"",
		"add a --dry-run flag to the migrate script",
		"that's wrong, the limit should be «N» not «N». also keep the old behaviour behind a flag",
		"write a benchmark for «f» and tell me the numbers",
		"¿puedes explicar qué hace «f»?",
	}
	proseUnicode = []string{
		"Résumé: the naïve approach works, but it's O(n²) — fine for «N» items.",
		"✓ build  ✓ vet  ✗ test («N» failures)",
		"Die Funktion «f» gibt bei leerer Eingabe „nil“ zurück.",
		"注意：«F» 的编码是 UTF-8，不是 GBK。",
		"テストは «N» 件成功しました 🎉",
		"Ошибка: «S»",
		"Latency dropped from «N» ms → «N» ms (−«N»%).",
	}
	markdownLines = []string{
		"## Summary", "### What changed", "### Why", "## Test plan", "",
		"- Fixed `«f»` in [«F»](file:///home/dev/«P»/«F»#L«N»)",
		"- Added a regression test for «S»",
		"- Renamed `«I»` → `«I»` (no behaviour change)",
		"1. Run `«C»`", "2. Check the output for `«S»`",
		"**Note:** the old behaviour is kept behind `--legacy-«I»`.",
		"| file | change |", "|---|---|", "| `«F»` | +«N» −«N» |",
		"> «S»",
		"The root cause was that «f» ignored the «I» returned by «f».",
		"All «N» tests pass ✓. Lint is clean.",
		"«u»",
		"```«L»", "«K»", "«K»", "«K»", "```",
		"See «U» for details.",
	}
)

var codeTemplates = [4][]string{
	langGo: {
		"package «P»", "", "import (", "\t\"context\"", "\t\"fmt\"", "\t\"regexp\"", ")",
		"// «f» «S».",
		"func (s *«T») «f»(ctx context.Context, «I» string) error {",
		"\tif «I» == \"\" {", "\t\treturn fmt.Errorf(\"«f»: empty «I»: %w\", ErrInvalid)", "\t}",
		"\tfor i := 0; i < s.«I»; i++ {", "\t\tselect {", "\t\tcase <-ctx.Done():", "\t\t\treturn ctx.Err()", "\t\tdefault:", "\t\t}",
		"\tvar dateRE = regexp.MustCompile(`^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}`)",
		"\tuncRE := regexp.MustCompile(\"^\\\\\\\\\\\\\\\\[^\\\\\\\\]+\\\\\\\\\")",
		"\tpath := \"C:\\\\Users\\\\dev\\\\«P»\\\\«F»\"",
		"\tmsg := fmt.Sprintf(\"%s: \\\"%s\\\"\\n\", «I», «S»)",
		"\t\ts.logger.Warn(\"«S»\", \"err\", err, \"«I»\", «I»)",
		"\treturn nil", "}", "",
		"type «T» struct {", "\t«I»  int64  `json:\"«I»\"`", "\tName string `json:\"name,omitempty\"`", "}",
		"\t// «u»",
		"\tif err := «f»(ctx, «I»); err != nil {", "\t\treturn err", "\t}",
		"\tdefer func() { _ = f.Close() }()",
		"\tb = append(b, '\"', '\\\\', 'n')",
	},
	langTS: {
		"import { «f» } from './«I»';", "import React, { useEffect, useState } from 'react';",
		"export async function «f»(«I»: string, opts: «T»Options = {}): Promise<«T»> {",
		"  const res = await fetch(`${baseUrl}/api/v1/«I»?limit=${opts.limit ?? «N»}`);",
		"  if (!res.ok) throw new Error(`«f» failed: ${res.status} \"${await res.text()}\"`);",
		"  return (await res.json()) as «T»;", "}", "",
		"  const re = /^[A-Z]:\\\\(?:[^\\\\/:*?\"<>|\\r\\n]+\\\\)*$/;",
		"  const winPath = 'C:\\\\Users\\\\dev\\\\«P»';",
		"export const «I» = «N»;",
		"  useEffect(() => {", "    const id = setInterval(«f», «N»);", "    return () => clearInterval(id);", "  }, [«I»]);",
		"  // «u»",
		"  return <div className=\"«I»\">{t('«S»')}</div>;",
		"describe('«f»', () => {", "  it('handles «S»', async () => {", "    expect(await «f»('«S»')).toEqual({ «I»: «N» });", "  });", "});",
		"\tconsole.log(JSON.stringify({ «I», msg: \"«S»\" }, null, 2));",
	},
	langPy: {
		"import re", "from dataclasses import dataclass", "from typing import Optional", "",
		"@dataclass", "class «T»:", "    «I»: int = «N»", "    name: Optional[str] = None", "",
		"def «f»(«I»: str, *, retries: int = «N») -> «T»:",
		"    \"\"\"«S».\"\"\"",
		"    if not «I»:", "        raise ValueError(f\"invalid «I»: {«I»!r}\")",
		"    pattern = re.compile(r\"^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}\")",
		"    path = \"C:\\\\Users\\\\dev\\\\«P»\\\\«F»\"",
		"    for attempt in range(retries):", "        try:", "            return _client.get(«I»)", "        except TimeoutError as exc:",
		"            log.warning(\"«S» (attempt %d): %s\", attempt, exc)",
		"    # «u»", "    return «T»()", "",
		"def test_«f»(tmp_path):", "    assert «f»(\"«S»\") == «T»(«I»=«N»)",
	},
	langRust: {
		"use std::path::PathBuf;", "use serde::{Deserialize, Serialize};", "",
		"#[derive(Debug, Clone, Serialize, Deserialize)]", "pub struct «T» {", "    pub «I»: u64,", "    #[serde(rename = \"«I»\")]", "    pub name: Option<String>,", "}", "",
		"pub fn «f»(«I»: &str) -> Result<«T», Error> {",
		"    let re = Regex::new(r\"^\\\\\\\\\\?\\\\[A-Z]:\\\\\").unwrap();",
		"    let path = PathBuf::from(\"C:\\\\Users\\\\dev\\\\«P»\");",
		"    let msg = format!(\"{}: \\\"{}\\\"\\n\", «I», \"«S»\");",
		"    if «I».is_empty() {", "        return Err(Error::Invalid(\"«S»\".into()));", "    }",
		"    // «u»", "    Ok(«T» { «I»: «N», name: None })", "}", "",
		"#[test]", "fn «f»_works() {", "    assert_eq!(«f»(\"«S»\").unwrap().«I», «N»);", "}",
	},
}

var shellTemplates = [][]string{
	{ // go test
		"=== RUN   Test«T»«f»", "=== RUN   Test«T»«f»/with_«I»", "--- PASS: Test«T»«f» (0.«N»s)", "--- FAIL: Test«T»«f»/with_«I» (0.«N»s)",
		"    «F»:«N»: got \"«S»\", want \"«S»\"", "    «F»:«N»: unexpected error: «E»",
		"FAIL\tgithub.com/«O»/«P»/internal/«I»\t0.«N»s", "ok  \tgithub.com/«O»/«P»/internal/«I»\t(cached)", "ok  \tgithub.com/«O»/«P»/pkg/«I»\t«N».«N»s",
		"panic: runtime error: index out of range [«N»] with length «N»", "goroutine «N» [running]:",
		"github.com/«O»/«P»/internal/«I».(*«T»).«f»(0xc000«H»)", "\t/home/dev/«P»/«F»:«N» +0x«H»",
		"WARNING: DATA RACE", "Write at 0x00c000«H» by goroutine «N»:",
	},
	{ // npm, tsc, vitest
		"\u001b[32m✓\u001b[39m «S» \u001b[2m(«N» ms)\u001b[22m", "\u001b[31m✗\u001b[39m «S»", "\u001b[31m\u001b[1mFAIL\u001b[22m\u001b[39m src/«I».test.ts > «f» > handles «S»",
		"src/«F»(«N»,«N»): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.",
		"  \u001b[36m➜\u001b[39m  \u001b[1mLocal\u001b[22m:   \u001b[36mhttp://localhost:5173/\u001b[39m",
		"npm warn deprecated «I»@«N».«N».«N»: This package is no longer supported.",
		"\u001b[1m\u001b[33mwarning\u001b[39m\u001b[22m  «S»  \u001b[2m@typescript-eslint/no-unused-vars\u001b[22m",
		"> «P»@0.1.0 build", "> vite build", "\u001b[2K\u001b[1Gtransforming («N») src/«F»",
		"    AssertionError: expected { «I»: «N» } to deeply equal { «I»: «N» }", "     ❯ src/«F»:«N»:«N»",
		"added «N» packages, and audited «N» packages in «N»s",
	},
	{ // cargo
		"   \u001b[1m\u001b[32mCompiling\u001b[0m «P» v0.«N».«N» (/home/dev/«P»)", "\u001b[1m\u001b[33mwarning\u001b[0m\u001b[1m: unused variable: `«I»`\u001b[0m",
		"  \u001b[1m\u001b[34m-->\u001b[0m src/«F»:«N»:«N»", "   \u001b[1m\u001b[34m|\u001b[0m", "\u001b[1m\u001b[34m«N»\u001b[0m \u001b[1m\u001b[34m|\u001b[0m     let «I» = «f»(&ctx)?;",
		"    \u001b[1m\u001b[32mFinished\u001b[0m `dev` profile [unoptimized + debuginfo] target(s) in «N».«N»s",
		"error[E0502]: cannot borrow `«I»` as mutable because it is also borrowed as immutable",
		"test parse::«I»::«f» ... ok", "test parse::«I»::«f» ... FAILED", "thread 'main' panicked at src/«F»:«N»:«N»:",
		"called `Result::unwrap()` on an `Err` value: «E»", "test result: FAILED. «N» passed; «N» failed; 0 ignored; 0 measured",
	},
	{ // python
		"Traceback (most recent call last):", "  File \"/home/dev/«P»/«F»\", line «N», in «f»", "    raise ValueError(f\"invalid «I»: {value!r}\")",
		"ValueError: invalid «I»: '«S»'", "============ «N» passed, «N» failed, «N» warnings in «N».«N»s ============",
		"FAILED tests/test_«I».py::test_«f» - AssertionError: assert '«S»' == '«S»'", "E       KeyError: '«I»'",
		"\u001b[32mPASSED\u001b[0m tests/test_«I».py::test_«f»[«S»]", "«F»:«N»: error: Incompatible types in assignment  [assignment]",
		"DEBUG:urllib3.connectionpool:https://api.example.com:443 \"GET /v1/«I» HTTP/1.1\" 200 «N»",
	},
	{ // git
		"commit «X»", "Author: «A» <«A»@example.com>", "Date:   Tue Feb 10 16:35:33 2026 +0100", "", "    «S»",
		" «F» | «N» +++++----", " «N» files changed, «N» insertions(+), «N» deletions(-)", "diff --git a/«F» b/«F»",
		"index «H»..«H» 100644", "@@ -«N»,«N» +«N»,«N» @@ func «f»(", "On branch main", "Your branch is ahead of 'origin/main' by «N» commits.",
		"\tmodified:   «F»", "«H» «S»",
	},
	{ // service logs, JSON and ANSI
		"{\"level\":\"info\",\"ts\":\"2026-02-10T16:35:33.«N»Z\",\"msg\":\"request completed\",\"path\":\"/api/v1/«I»\",\"status\":200,\"duration_ms\":«N»}",
		"{\"level\":\"error\",\"ts\":\"2026-02-10T16:35:34.«N»Z\",\"msg\":\"«E»\",\"err\":\"«S»\",\"caller\":\"«F»:«N»\"}",
		"{\"msg\":\"config loaded\",\"path\":\"C:\\\\Users\\\\dev\\\\«P»\\\\config.yaml\",\"raw\":\"{\\\"a\\\":\\\"b\\\\\\\\c\\\"}\"}",
		"\u001b[2m2026-02-10T16:35:33Z\u001b[0m \u001b[32m INFO\u001b[0m \u001b[2m«P»::«I»\u001b[0m: server started addr=0.0.0.0:«N»",
		"\u001b[2m2026-02-10T16:35:35Z\u001b[0m \u001b[33m WARN\u001b[0m «S» retry=«N»", "api-1  | «S»", "worker-1  | \u001b[31mERROR\u001b[0m «E»",
		"Downloading «I» [=====>          ] «N»%\r", "\u0007\u001b]0;«P»\u0007",
	},
	{ // windows
		"PS C:\\Users\\dev\\«P»> dotnet build", "  «P» -> C:\\Users\\dev\\source\\repos\\«P»\\bin\\Debug\\net8.0\\«P».dll",
		"C:\\Users\\dev\\«P»\\src\\«T».cs(«N»,«N»): error CS0103: The name '«I»' does not exist in the current context [C:\\Users\\dev\\«P»\\«P».csproj]",
		"\\\\?\\C:\\Users\\dev\\AppData\\Local\\Temp\\«H»\\«I».tmp", "Select-String -Pattern '\\\\\\\\server\\\\share\\\\[^\\\\]+' -Path .\\logs\\*.log",
		"    Directory: C:\\Users\\dev\\«P»\\src", "-a----        10/02/2026     16:35          «N» «I».cs", "Build succeeded.", "    «N» Warning(s)",
	},
	{ // ls, find, du
		"-rw-r--r--  1 dev dev  «N» Feb 10 16:35 «F»", "drwxr-xr-x  «N» dev dev  4096 Feb  9 09:12 «I»", "total «N»",
		"./«F»", "«N»\t./«I»", "lrwxrwxrwx  1 dev dev    «N» Feb  1 11:02 current -> releases/«H»",
	},
}

var deployTemplates = []string{
	"==> Building image registry.example.com/«P»:«H»", "Step «N»/«N» : RUN go build -trimpath -o /out/«P» ./cmd/«P»",
	" ---> Using cache", " ---> «H»", "\u001b[32m✔\u001b[0m Pushed registry.example.com/«P»:«H»",
	"deployment.apps/«P» configured", "Waiting for deployment \"«P»\" rollout to finish: «N» of «N» updated replicas are available...",
	"\u001b[32m✔\u001b[0m Deployed «P» to staging (revision «N»)", "\u001b[31m✘\u001b[0m Health check failed: «E»",
}

var jsonTextTemplates = []string{
	"{\"path\":\"«F»\",\"repository\":\"«O»/«P»\",\"sha\":\"«X»\",\"text_matches\":[{\"fragment\":\"func «f»(ctx context.Context) error {\\n\\treturn «f»(ctx, \\\"«S»\\\")\\n}\"}]}",
	"{\"path\":\"«F»\",\"repository\":\"«O»/«P»\",\"text_matches\":[{\"fragment\":\"re := regexp.MustCompile(`\\\\d+\\\\.\\\\d+`)\"}]}",
	"Found «N» results in «O»/«P»:", "«F»:«N»: «K»",
}

// expand fills the «slots» of a template.
func expand(r *rand.Rand, tpl string, lang int) string {
	b := make([]byte, 0, len(tpl)+32)
	for {
		i := indexStr(tpl, "«")
		if i < 0 {
			return string(append(b, tpl...))
		}
		b = append(b, tpl[:i]...)
		tpl = tpl[i+len("«"):]
		j := indexStr(tpl, "»")
		slot := tpl[:j]
		tpl = tpl[j+len("»"):]
		switch slot {
		case "F":
			b = append(b, pick(r, langFiles[lang])...)
		case "f":
			b = append(b, pick(r, funcNames)...)
		case "I":
			b = append(b, pick(r, idents)...)
		case "T":
			b = append(b, pick(r, typeNames)...)
		case "N":
			b = strconv.AppendInt(b, int64(r.IntN(1000)), 10)
		case "P":
			b = append(b, pick(r, projectNames)...)
		case "O":
			b = append(b, pick(r, orgNames)...)
		case "A":
			b = append(b, pick(r, userNames)...)
		case "S":
			b = append(b, pick(r, phrases)...)
		case "E":
			b = append(b, pick(r, errorMessages)...)
		case "H":
			b = append(b, randHex(r, 7)...)
		case "X":
			b = append(b, randHex(r, 40)...)
		case "U":
			b = append(b, pick(r, urls)...)
		case "C":
			b = append(b, pick(r, commands[lang])...)
		case "L":
			b = append(b, [...]string{"go", "ts", "python", "rust"}[lang]...)
		case "K":
			k := expand(r, pick(r, codeTemplates[lang]), lang)
			b = append(b, k...)
		case "u":
			b = append(b, expand(r, pick(r, proseUnicode), lang)...)
		default:
			panic("threadgen: unknown slot " + slot)
		}
	}
}

func indexStr(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// buildPool expands n lines from templates (picked in runs, in order, so
// consecutive lines look like one file or one log) and escapes them, each
// ending with sep (escaped).
func buildPool(r *rand.Rand, templates []string, n int, sep func() string) *pool {
	p := &pool{lines: make([]string, n)}
	j := 0
	for i := range p.lines {
		if r.IntN(4) == 0 {
			j = r.IntN(len(templates))
		}
		lang := r.IntN(4)
		s := expand(r, templates[j], lang)
		p.lines[i] = string(appendEscaped(nil, s+sep()))
		j = (j + 1) % len(templates)
	}
	return p
}

var (
	poolsOnce                                                                  sync.Once
	poolThinking, poolText, poolPrompt, poolMarkdown, poolDeploy, poolJSONText *pool
	codePools                                                                  [4]*pool
	shellPools                                                                 []*pool
	b64Pool                                                                    string // random base64 that images and signatures are cut from
)

// buildPools builds the text pools, once, the first time New is called.
func buildPools() {
	r := rand.New(rand.NewPCG(0x706f6f6c, 0x73)) // fixed: pools are the same in every run
	raw := make([]byte, 3<<20)
	for i := 0; i < len(raw); i += 8 {
		x := r.Uint64()
		for j := 0; j < 8 && i+j < len(raw); j++ {
			raw[i+j] = byte(x >> (8 * j))
		}
	}
	b64Pool = base64.StdEncoding.EncodeToString(raw)
	nl := func() string { return "\n" }
	para := func() string {
		if r.IntN(5) == 0 {
			return "\n\n"
		}
		return " "
	}
	rnd := func(ts []string) []string { // prose: pick at random, not in runs
		out := make([]string, len(ts))
		copy(out, ts)
		return out
	}
	poolThinking = buildPool(r, rnd(append(proseThinking, proseText...)), 2048, para)
	poolText = buildPool(r, proseText, 1024, para)
	poolPrompt = buildPool(r, append(prosePrompt, proseUnicode...), 1024, para)
	poolMarkdown = buildPool(r, markdownLines, 4096, nl)
	poolDeploy = buildPool(r, deployTemplates, 1024, nl)
	poolJSONText = buildPool(r, jsonTextTemplates, 1024, nl)
	for lang := range codePools {
		tpl := codeTemplates[lang]
		p := &pool{lines: make([]string, 4096)}
		j := 0
		for i := range p.lines {
			if r.IntN(8) == 0 {
				j = r.IntN(len(tpl))
			}
			p.lines[i] = string(appendEscaped(nil, expand(r, tpl[j], lang)+"\n"))
			j = (j + 1) % len(tpl)
		}
		codePools[lang] = p
	}
	for _, tpl := range shellTemplates {
		shellPools = append(shellPools, buildPool(r, tpl, 4096, nl))
	}
}
