package workspacetest

import "time"

// Usage is spend in tokens by type, requests and dollars (in units of
// 2⁻²⁴ USD, UnitsPerUSD).
type Usage struct {
	Requests                 int64
	InputTokens              int64
	OutputTokens             int64
	CacheReadInputTokens     int64
	CacheCreationInputTokens int64
	Units                    int64
}

// USD is the dollars, exact in float64.
func (u Usage) USD() float64 { return float64(u.Units) / UnitsPerUSD }

// TotalTokens is the four token counts added together.
func (u Usage) TotalTokens() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

// Add adds v to u.
func (u *Usage) Add(v Usage) {
	u.Requests += v.Requests
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CacheReadInputTokens += v.CacheReadInputTokens
	u.CacheCreationInputTokens += v.CacheCreationInputTokens
	u.Units += v.Units
}

// UserModel keys spend by user id and model name.
type UserModel struct{ User, Model string }

// DayUserModel keys the rollup's model entries.
type DayUserModel struct{ Day, User, Model string }

// DayUser keys the rollup's per-member figures.
type DayUser struct{ Day, User string }

// UserDay is a member's day in the rollup: metrics.usage in units and
// the lines.
type UserDay struct {
	Units                                   int64
	LinesAdded, LinesDeleted, LinesModified int64
}

// ThreadTotals is the thread view: what summing the usage of every main
// thread gives (sub-threads once, inside their parent), by the parent's
// creatorUserID.
type ThreadTotals struct {
	ByUserModel map[UserModel]Usage
	// ByRepository is keyed by the thread's first repository as listed
	// (not normalised; "" for a thread without one): one convention for
	// a thread that lists several, the stand-in's, not Amp's.
	ByRepository map[string]Usage
	Total        Usage
	// MainThreads and SubThreads are how many threads were summed.
	MainThreads, SubThreads int
}

// Rollup is the daily rollup as the stand-in serves it now (growth and
// restatements included), keyed by the rollup's user.id.
type Rollup struct {
	ByDay   map[DayUserModel]Usage
	UserDay map[DayUser]UserDay
	Total   Usage // over the model entries
}

// growthUsage is what one step of today's growth adds to a thread.
func growthUsage(model int) Usage {
	u := Usage{Requests: 1, InputTokens: 1000, OutputTokens: 2000, CacheReadInputTokens: 10000}
	m := Models[model]
	u.Units = u.InputTokens*m.input + u.OutputTokens*m.output + u.CacheReadInputTokens*m.read
	return u
}

// threadNow is a thread as served now: generated, plus today's growth.
// Callers hold s.mu.
func (s *Server) threadNow(i, k int) thread {
	t := s.ws.thread(i, k)
	if n := s.grown[i]; k == 0 && n > 0 {
		m := UserModels(t.creator)[0]
		for range n {
			t.records = append(t.records, record{at: s.ws.cfg.Now, model: m, u: growthUsage(m), estimate: growthUsage(m).Units})
		}
		t.last = t.last.Add(time.Duration(n) * time.Minute)
	}
	return t
}

// usageOf is a main thread's usage with its sub-threads rolled in, per
// model index. Callers hold s.mu.
func (s *Server) usageOf(t thread) (byModel map[int]Usage, subs []thread) {
	byModel = map[int]Usage{}
	add := func(t thread) {
		for _, r := range t.records {
			u := byModel[r.model]
			u.Add(r.u)
			byModel[r.model] = u
		}
	}
	add(t)
	for k := 1; k <= t.subs; k++ {
		st := s.threadNow(t.index, k)
		subs = append(subs, st)
		add(st)
	}
	return byModel, subs
}

// ThreadTotals sums every main thread's usage; with servedOnly, only the
// threads whose usage the API still serves (inside the retention window).
func (s *Server) ThreadTotals(servedOnly bool) ThreadTotals {
	s.mu.Lock()
	defer s.mu.Unlock()
	tt := ThreadTotals{ByUserModel: map[UserModel]Usage{}, ByRepository: map[string]Usage{}}
	for i := range s.ws.cfg.Threads {
		t := s.threadNow(i, 0)
		if servedOnly && s.pastWindowLocked(t) {
			continue
		}
		byModel, subs := s.usageOf(t)
		tt.MainThreads++
		tt.SubThreads += len(subs)
		repo := ""
		if len(t.repos) > 0 {
			repo = Repositories[t.repos[0]]
		}
		for m, u := range byModel {
			k := UserModel{s.ws.userID(t.creator), Models[m].Name}
			v := tt.ByUserModel[k]
			v.Add(u)
			tt.ByUserModel[k] = v
			v = tt.ByRepository[repo]
			v.Add(u)
			tt.ByRepository[repo] = v
			tt.Total.Add(u)
		}
	}
	return tt
}

// Rollup is the whole daily rollup from the first thread's day to today.
func (s *Server) Rollup() Rollup {
	s.mu.Lock()
	defer s.mu.Unlock()
	ro := Rollup{ByDay: map[DayUserModel]Usage{}, UserDay: map[DayUser]UserDay{}}
	for d := 0; d <= s.ws.today(); d++ {
		for _, e := range s.dayLocked(d) {
			ud := UserDay{Units: e.metricsUnits, LinesAdded: e.added, LinesDeleted: e.deleted, LinesModified: e.modified}
			ro.UserDay[DayUser{s.ws.date(d), e.id}] = ud
			for j, m := range e.models {
				if e.used[j] {
					ro.ByDay[DayUserModel{s.ws.date(d), e.id, Models[m].Name}] = e.usage[j]
					ro.Total.Add(e.usage[j])
				}
			}
		}
	}
	return ro
}

// buildRollup sums every thread's records per day, member and model slot:
// the only figures kept for the whole workspace (days × members × 2),
// with the list-price estimates beside them.
func (w *workspace) buildRollup() (out []Usage, estimates []int64) {
	users := w.cfg.Users
	out = make([]Usage, (w.today()+1)*users*2)
	estimates = make([]int64, len(out))
	for i := range w.cfg.Threads {
		main := w.thread(i, 0)
		for k := 0; k <= main.subs; k++ {
			t := main
			if k > 0 {
				t = w.thread(i, k)
			}
			ms := UserModels(t.creator)
			for _, r := range t.records {
				slot := 0
				if r.model == ms[1] {
					slot = 1
				}
				n := (w.day(r.at)*users+t.creator)*2 + slot
				out[n].Add(r.u)
				estimates[n] += r.estimate
			}
		}
	}
	return out, estimates
}

// dayEntry is one member's day in the rollup.
type dayEntry struct {
	member                   int
	id                       string
	models                   [2]int
	usage                    [2]Usage
	used                     [2]bool
	metricsUnits             int64
	added, deleted, modified int64
}

// dayLocked is day d's members with activity, growth and restatements
// included, in member order. Callers hold s.mu.
func (s *Server) dayLocked(d int) []dayEntry {
	w := s.ws
	users := w.cfg.Users
	if d < 0 || d > w.today() {
		return nil
	}
	var grown map[int]int // member → steps of growth today
	if d == w.today() && len(s.grown) > 0 {
		grown = map[int]int{}
		for i, n := range s.grown {
			grown[s.creators[i]] += n
		}
	}
	var out []dayEntry
	for u := range users {
		e := dayEntry{member: u, id: w.rollupUserID(u), models: UserModels(u)}
		active := false
		for j := range 2 {
			e.usage[j] = s.rollup[(d*users+u)*2+j]
		}
		for range grown[u] {
			e.usage[0].Add(growthUsage(e.models[0]))
		}
		e.usage[0].Units += s.restated[DayUser{w.date(d), e.id}]
		for j := range 2 {
			e.used[j] = e.usage[j] != Usage{}
			active = active || e.used[j]
			e.metricsUnits += e.usage[j].Units
		}
		if !active {
			continue
		}
		if w.cfg.NonThreadUsage {
			e.metricsUnits += NonThreadUnits
		}
		e.added, e.deleted, e.modified = w.lines(u, d)
		out = append(out, e)
	}
	return out
}
