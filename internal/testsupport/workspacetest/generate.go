package workspacetest

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// Config is what the workspace holds: its members, threads and days. Every
// figure derives from Seed, so two stand-ins of one Config hold the same
// workspace, and a thread is computed from its index when it is asked for
// (nothing is built per thread up front but the daily rollup's sums).
type Config struct {
	Seed uint64
	// Users is the number of members who made threads (default 50).
	Users int
	// Threads is the number of main threads (default 2000); sub-threads
	// come on top, about one for every three main threads.
	Threads int
	// Days is how far back the first thread lies (default 120).
	Days int
	// Now is the workspace's present (default 2026-08-12T12:00:00Z):
	// "today" is its date in Zone.
	Now time.Time
	// Zone is the time zone of the rollup's dates (default UTC; open
	// question: the real one is undocumented).
	Zone *time.Location
	// SubThreadsByOthers makes every sub-thread the work of another member
	// (the parent's creator's neighbour): the rollup gives its spend to its
	// own creator, the thread view to its parent's.
	SubThreadsByOthers bool
	// NonThreadUsage adds spend outside any thread to each active member's
	// day: it is in the rollup's metrics.usage only, not in its models
	// and not in any thread's usage (NonThreadUnits per member and day).
	NonThreadUsage bool
	// BYOKEvery, when n > 0, makes every n-th main thread (and its
	// sub-threads) run on the workspace's own provider keys: tokens
	// counted, usage 0 dollars, only the list-price estimate says what it
	// would have cost.
	BYOKEvery int
	// SeparateUserIDs makes the rollup name members in an id space of its
	// own ("member_<n>") instead of the threads' creatorUserID.
	SeparateUserIDs bool
	// LinesModified says how the rollup's linesModified relates to lines
	// added and deleted.
	LinesModified LinesMode
}

// LinesMode is how linesModified is made (open question).
type LinesMode int

const (
	// LinesIndependent: a figure of its own.
	LinesIndependent LinesMode = iota
	// LinesMinOfAddedDeleted: min(added, deleted), lines replaced.
	LinesMinOfAddedDeleted
	// LinesZero: always 0.
	LinesZero
)

// UnitsPerUSD is the resolution of every dollar figure: amounts are whole
// multiples of 2⁻²⁴ USD (about 6e-8), so sums of them in float64 are exact
// in any order and a test compares dollars with ==.
const UnitsPerUSD = 1 << 24

// NonThreadUnits is the spend outside threads per active member and day
// (Config.NonThreadUsage), in units.
const NonThreadUnits = 3 * UnitsPerUSD / 8

// RemoteSecret is the token inside one repository's remote URL: found in a
// metric, log line, page or state, it is a leak.
const RemoteSecret = "WsStandInS3cr3t"

// Repositories are the remotes threads list, as a workspace's threads
// spell them (not normalised; one with a token in it).
var Repositories = []string{
	"https://github.com/acme/api",
	"git@github.com:acme/web.git",
	"https://x-access-token:" + RemoteSecret + "@github.com/acme/payments.git",
	"https://gitlab.com/acme/infra/",
	"ssh://git@bitbucket.org/acme/tools",
}

// Model is a model members use, with its price per token in units.
type Model struct {
	Provider, Name                string
	input, output, read, creation int64
}

// Models are the models of the workspace. Member u uses two of them
// (UserModels).
var Models = []Model{
	{"anthropic", "claude-sonnet-4-5", 50, 252, 5, 63},
	{"anthropic", "claude-opus-4-1", 252, 1258, 25, 315},
	{"openai", "gpt-5", 21, 168, 2, 0},
	{"google", "gemini-2.5-pro", 21, 168, 5, 0},
	{"xai", "grok-4", 50, 252, 13, 0},
}

// UserModels are the indexes into Models of member u's two models.
func UserModels(u int) [2]int {
	n := len(Models)
	a := u % n
	return [2]int{a, (a + 1 + (u/n)%(n-1)) % n}
}

const maxSubs = 2

func (c Config) withDefaults() Config {
	if c.Users <= 0 {
		c.Users = 50
	}
	if c.Threads <= 0 {
		c.Threads = 2000
	}
	if c.Days <= 0 {
		c.Days = 120
	}
	if c.Now.IsZero() {
		c.Now = time.Date(2026, 8, 12, 12, 0, 0, 0, time.UTC)
	}
	if c.Zone == nil {
		c.Zone = time.UTC
	}
	return c
}

// record is a thread's spend at one time on one model.
type record struct {
	at       time.Time
	model    int
	u        Usage
	estimate int64 // list-price units, whatever was billed
}

// thread is one generated thread (main: sub == 0; sub-thread k: sub == k).
type thread struct {
	index, sub  int
	id          string
	creator     int // member index
	created     time.Time
	firstSynced time.Time
	last        time.Time
	repos       []int // indexes into Repositories
	subs        int   // sub-threads of a main thread
	byok        bool
	records     []record
}

// workspace generates threads.
type workspace struct {
	cfg   Config
	start time.Time
	slot  time.Duration
}

func newWorkspace(cfg Config) *workspace {
	cfg = cfg.withDefaults()
	span := time.Duration(cfg.Days) * 24 * time.Hour
	return &workspace{cfg: cfg, start: cfg.Now.Add(-span), slot: span / time.Duration(cfg.Threads)}
}

func (w *workspace) rng(i, k int, salt uint64) *rand.Rand {
	return rand.New(rand.NewPCG(w.cfg.Seed^salt, uint64(i)<<8|uint64(k)))
}

// threadID is T-<uuid> with the main index and sub-thread number in its
// first groups, so an id finds its thread without a map, and the rest a
// hash of the seed, so an id of another seed or a made-up one is unknown.
func (w *workspace) threadID(i, k int) string {
	h := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[:], w.cfg.Seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(i))
	binary.LittleEndian.PutUint64(b[16:], uint64(k))
	h.Write(b[:])
	x := h.Sum64()
	return fmt.Sprintf("T-%08x-%04x-4%03x-8%03x-%012x", i, k, x>>52, (x>>40)&0xfff, x&0xffffffffffff)
}

// parseThreadID is threadID's inverse; ok is false for an id it did not
// make.
func (w *workspace) parseThreadID(id string) (i, k int, ok bool) {
	var x, y uint64
	if len(id) != 38 {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(id[:17], "T-%08x-%04x-", &x, &y); err != nil {
		return 0, 0, false
	}
	i, k = int(x), int(y)
	if i >= w.cfg.Threads || w.threadID(i, k) != id {
		return 0, 0, false
	}
	if k > 0 && k > w.thread(i, 0).subs {
		return 0, 0, false
	}
	return i, k, true
}

// UserID is member u's Amp user id (the threads' creatorUserID).
func (w *workspace) userID(u int) string {
	return fmt.Sprintf("user_%02x%06x", w.cfg.Seed&0xff, u)
}

// rollupUserID is member u's user.id in the daily rollup.
func (w *workspace) rollupUserID(u int) string {
	if w.cfg.SeparateUserIDs {
		return fmt.Sprintf("member_%d", u)
	}
	return w.userID(u)
}

func email(u int) string { return fmt.Sprintf("dev%d@example.com", u) }

// thread generates main thread i (k == 0) or its k-th sub-thread. Threads
// are created in index order, each main thread in a slot of its own and
// its sub-threads later in the same slot, so the listing's order (first
// sync ascending) is index order, main thread before its sub-threads.
func (w *workspace) thread(i, k int) thread {
	r := w.rng(i, 0, 0x7468726561640000)
	slotMs := max(w.slot.Milliseconds(), 8)
	t := thread{index: i, id: w.threadID(i, 0)}
	t.created = w.start.Add(time.Duration(int64(i)*slotMs+r.Int64N(slotMs/4)) * time.Millisecond)
	t.creator = r.IntN(w.cfg.Users)
	switch x := r.IntN(10); {
	case x < 7:
	case x < 9:
		t.subs = 1
	default:
		t.subs = 2
	}
	switch x := r.IntN(10); {
	case x < 2:
	case x < 8:
		t.repos = []int{r.IntN(len(Repositories))}
	default:
		a := r.IntN(len(Repositories))
		t.repos = []int{a, (a + 1) % len(Repositories)}
	}
	t.byok = w.cfg.BYOKEvery > 0 && i%w.cfg.BYOKEvery == 0
	if k > 0 {
		quarter := time.Duration(slotMs/4) * time.Millisecond
		t.sub, t.id, t.subs = k, w.threadID(i, k), 0
		t.created = t.created.Add(quarter * time.Duration(k))
		if w.cfg.SubThreadsByOthers {
			t.creator = (t.creator + 1) % w.cfg.Users
		}
		r = w.rng(i, k, 0x7375620000000000)
	}
	t.firstSynced = t.created.Add(time.Duration(slotMs/16) * time.Millisecond)
	dur := time.Duration(r.Int64N(int64(30*time.Hour))) + time.Minute
	t.last = t.created.Add(dur)
	if t.last.After(w.cfg.Now) {
		t.last = w.cfg.Now
	}
	ms := UserModels(t.creator)
	t.records = []record{w.spend(r, t.created, ms[0], t.byok)}
	if r.IntN(2) == 0 {
		t.records = append(t.records, w.spend(r, t.last, ms[1], t.byok))
	} else {
		t.records = append(t.records, w.spend(r, t.last, ms[0], t.byok))
	}
	return t
}

func (w *workspace) spend(r *rand.Rand, at time.Time, model int, byok bool) record {
	u := Usage{
		Requests:                 1 + r.Int64N(40),
		InputTokens:              100 + r.Int64N(5000),
		OutputTokens:             200 + r.Int64N(20000),
		CacheReadInputTokens:     r.Int64N(300000),
		CacheCreationInputTokens: r.Int64N(20000),
	}
	m := Models[model]
	units := u.InputTokens*m.input + u.OutputTokens*m.output + u.CacheReadInputTokens*m.read + u.CacheCreationInputTokens*m.creation
	rec := record{at: at, model: model, estimate: units}
	if !byok {
		u.Units = units
	}
	rec.u = u
	return rec
}

// day is the index of t's date in Zone, counted from the first thread's
// date.
func (w *workspace) day(t time.Time) int {
	y, m, d := w.start.In(w.cfg.Zone).Date()
	first := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	y, m, d = t.In(w.cfg.Zone).Date()
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Sub(first) / (24 * time.Hour))
}

// date is day index n as YYYY-MM-DD.
func (w *workspace) date(n int) string {
	y, m, d := w.start.In(w.cfg.Zone).Date()
	return time.Date(y, m, d+n, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
}

// today is the day index of Now.
func (w *workspace) today() int { return w.day(w.cfg.Now) }

// lines are member u's lines added, deleted and modified on day n (given
// that the member was active).
func (w *workspace) lines(u, n int) (added, deleted, modified int64) {
	r := w.rng(u, 0, 0x6c696e6573000000^uint64(n)<<20)
	added, deleted = 1+r.Int64N(800), r.Int64N(300)
	switch w.cfg.LinesModified {
	case LinesIndependent:
		modified = r.Int64N(100)
	case LinesMinOfAddedDeleted:
		modified = min(added, deleted)
	}
	return added, deleted, modified
}
