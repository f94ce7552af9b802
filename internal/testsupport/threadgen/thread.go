package threadgen

import (
	"math"
	"math/rand/v2"
	"strconv"
)

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
	tFastmod     // legacy (CLI-Jan), Options.Edits only
	tEnqueueEdit // legacy (CLI-Jan), Options.Edits only
	nTools
)

var toolNames = [nTools]string{
	tBash: "Bash", tShell: "shell_command", tRead: "Read", tGrep: "Grep", tGlob: "glob",
	tEdit: "edit_file", tCreate: "create_file", tWebPage: "read_web_page", tWebSearch: "web_search",
	tTask: "Task", tFinder: "finder", tOracle: "oracle", tMCP: "mcp__github__search_code",
	tDeploy: "tb__deploy", tPatch: "apply_patch", tFastmod: "fastmod", tEnqueueEdit: "enqueue_file_edit",
}

// toolMult is the mean result size of a tool relative to the thread's mean.
var toolMult = [nTools]float64{
	tBash: 1.1, tShell: 1.1, tRead: 1.5, tGrep: 0.8, tGlob: 0.35, tEdit: 0.35, tCreate: 0.02,
	tWebPage: 1.6, tWebSearch: 0.8, tTask: 4, tFinder: 1.5, tOracle: 1.4, tMCP: 0.8, tDeploy: 0.6,
	tPatch: 0.05, tFastmod: 0.02, tEnqueueEdit: 0.02,
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
	speed                                  string // asked in features; "" for none (speeds.go)
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

// threadBuilder is one thread being generated: its random stream, the
// writer its JSON goes to, what it is about, and the running state that
// steers it to its target size.
type threadBuilder struct {
	r      *rand.Rand
	w      *jsonWriter
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
	// serverBehind is how far the Amp server's clock, which stamps the
	// ledger events, is behind the client's, which stamps the thread and
	// its messages (serverBehind in threadgen.go), in ms.
	serverBehind int64

	now        int64 // clock, epoch ms
	lastInfer  int64
	msgID      int64
	nAssist    int
	nTool      int
	ctx        int64 // context tokens so far
	cached     int64 // tokens cached by the previous inference
	sysTokens  int64
	toolBytes  int
	phi, psi   float64 // multipliers of tool-result and other sizes, see steer
	lim        int     // budget for the other content of one message
	models     []string
	events     []ledgerEvent
	last       usage // max-merged, for ~debug.lastInferenceUsage
	inferLog   []usage
	remote     remote                // the first tree's repository (repositories.go)
	spent      map[string]Tokens     // by model, from tally
	spentAt    []spentItem           // what tally counted, with its time (daily.go)
	edits      bool                  // Options.Edits: edits with known line counts
	lines      map[LineKey]int64     // lines changed, from tallyCall (with edits)
	shell      map[string]int64      // shell commands by outcome, from tallyCall
	commits    bool                  // Options.Commits (commits.go)
	vcs        VCS                   // what its cases did, from tallyVCS
	plan       speedPlan             // Options.Speeds (speeds.go)
	spentSpeed map[ModelSpeed]Tokens // what tally counted, by model and speed
}

func newThread(g *Generator, i, target int, buf []byte) *threadBuilder {
	r := g.rng(i, 0)
	t := &threadBuilder{
		r:       r,
		w:       &jsonWriter{b: buf},
		id:      g.threadID(i),
		created: g.createdMs(i),
		target:  target,
		edits:   g.edits,
		commits: g.commits,
	}
	t.ledger = r.IntN(20) == 0
	if t.ledger {
		t.serverBehind = g.serverBehind(i)
	}
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
	g.planSpeed(t, i)
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
func (t *threadBuilder) est() int {
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

func (t *threadBuilder) remaining() int { return t.target - t.est() }

// steer pulls the thread towards its planned tool-result share: when tool
// results are behind, the next ones are larger (phi) and the other content
// smaller (psi), and the other way round. lim keeps the other content of
// one message from overrunning the thread's size.
func (t *threadBuilder) steer() {
	prior := 4 * t.meanTool
	now := (float64(t.toolBytes) + t.share*prior) / (float64(t.est()) + prior)
	d := t.share - now
	t.phi = min(6, max(0.2, math.Exp(12*d)))
	t.psi = min(8, max(0.4, math.Exp(-10*d)))
	t.lim = max(300, t.remaining()/3)
}

// other draws the size of a piece of content that is not a tool result,
// and takes it from lim.
func (t *threadBuilder) other(median, s, limit float64) int {
	n := min(int(lognorm(t.r, median*t.psi, s)), int(limit*t.psi), max(40, t.lim))
	t.lim -= n
	return n
}

// body writes the messages and the trailer, leaving the writer at depth 0.
// The header is written separately, by header.
func (t *threadBuilder) body() {
	w := t.w
	w.depth = 1
	w.cnt[1] = 7 // the header's members come before
	t.base = len(w.b)
	w.keyArray("messages")
	t.conversation()
	w.endArr()
	if t.ledger {
		t.writeLedger()
	}
	w.keyObject("~debug")
	w.key("lastInferenceUsage")
	t.writeUsage(t.last)
	w.endObj()
	w.endObj()
}

// conversation writes exchanges (prompt, tool cycles, answer) into the open
// messages array until the (sub)thread reaches its target size.
func (t *threadBuilder) conversation() {
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

func (t *threadBuilder) header(b []byte) []byte {
	w := &jsonWriter{b: b}
	w.obj()
	nMsg := t.msgID
	w.keyInt("v", nMsg*3+int64(t.nTool)*2+int64(t.r.IntN(40))+5)
	w.keyString("id", t.id)
	w.keyInt("created", t.created)
	w.keyString("title", t.title())
	w.keyString("agentMode", t.mode)
	w.keyInt("nextMessageId", nMsg)
	w.keyObject("env")
	w.keyObject("initial")
	w.keyArray("trees")
	w.elemObject()
	p := t.proj
	w.keyString("displayName", p.name)
	w.keyString("uri", p.uri)
	t.writeRepository(w)
	w.endObj()
	w.endArr()
	w.keyObject("platform")
	w.keyString("os", p.os)
	w.keyString("osVersion", p.osVersion)
	w.keyString("cpuArchitecture", p.arch)
	w.keyBool("webBrowser", false)
	w.keyString("client", "CLI")
	w.keyString("clientVersion", t.clientVersion())
	w.keyString("clientType", "cli")
	w.endObj()
	w.keyArray("tags")
	for _, m := range t.models {
		w.elemString("model:" + m)
	}
	w.endArr()
	w.endObj()
	w.endObj()
	return w.b
}

func (t *threadBuilder) title() string {
	r := t.r
	s := pick(r, titles)
	if r.IntN(4) == 0 {
		s += " in " + t.proj.files[r.IntN(len(t.proj.files))]
	}
	return s
}

func (t *threadBuilder) clientVersion() string {
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

func (t *threadBuilder) useModel(m string) {
	for _, x := range t.models {
		if x == m {
			return
		}
	}
	t.models = append(t.models, m)
}
