package workspacetest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// MaxLookbackDays is the largest lookbackDays the rollup takes.
const MaxLookbackDays = 365

// daily serves GET /api/v2/workspace/analytics/daily-usage.
func (s *Server) daily(w http.ResponseWriter, r *http.Request, scopes map[string]bool) {
	o := s.Options()
	p := o.Params
	q := r.URL.Query()
	if o.StrictParams {
		known := []string{p.LookbackDays, p.EndDate}
		if o.UserIDFilter {
			known = append(known, p.UserID)
		}
		if k := unknownParam(q, known...); k != "" {
			writeError(w, http.StatusBadRequest, "unknown parameter "+k)
			return
		}
	}
	lookback := o.DefaultLookback
	if v, ok := q[p.LookbackDays]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > MaxLookbackDays {
			writeError(w, http.StatusBadRequest, "lookbackDays must be an integer from 1 to 365")
			return
		}
		lookback = n
	}
	ws := s.ws
	end := ws.today()
	if v, ok := q[p.EndDate]; ok {
		d, err := time.Parse(time.DateOnly, v[0])
		if err != nil {
			writeError(w, http.StatusBadRequest, "endDate must be YYYY-MM-DD")
			return
		}
		end = int(d.Sub(mustDate(ws.date(0))) / (24 * time.Hour))
	}
	start := end - lookback + 1
	if o.WindowOneDayLonger {
		start--
	}
	first := start
	if o.MaxAge365 {
		first = max(first, ws.today()-MaxLookbackDays)
	}
	only := ""
	if o.UserIDFilter {
		only = q.Get(p.UserID)
	}
	s.mu.Lock()
	data := []any{}
	active := map[string]bool{}
	var total int64
	for d := first; d <= end; d++ {
		entries := s.dayLocked(d)
		if o.ZeroUsers {
			entries = s.withZeros(d, entries)
		}
		users := []any{}
		for _, e := range entries {
			if only != "" && e.id != only {
				continue
			}
			if e.metricsUnits != 0 {
				active[e.id] = true
			}
			total += e.metricsUnits
			users = append(users, s.userDay(o, e, d, scopes))
		}
		if len(users) == 0 && o.SkipEmptyDays {
			continue
		}
		if o.NullItems {
			users = append(users, nil)
		}
		data = append(data, map[string]any{"date": ws.date(d), "users": users})
	}
	s.mu.Unlock()
	if o.NullItems {
		data = append(data, nil)
	}
	meta := map[string]any{
		"startDate": ws.date(start), "endDate": ws.date(end),
		"activeUsers": len(active), "totalUsers": ws.cfg.Users, "totalUsage": float64(total) / UnitsPerUSD,
	}
	for _, k := range []string{"activeUsers", "totalUsers"} {
		switch {
		case o.NullOptional:
			meta[k] = nil
		case o.OmitOptional:
			delete(meta, k)
		}
	}
	body := map[string]any{"metadata": meta, "data": data}
	if o.ExtraFields {
		body["x-standin"] = map[string]any{"unknown": true}
	}
	b, err := json.Marshal(body)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if o.DailyMaxBytes > 0 && len(b) > o.DailyMaxBytes {
		writeError(w, http.StatusBadRequest, "response too large: ask for fewer days")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// withZeros adds the members without activity on day d, with zeros.
// Callers hold s.mu.
func (s *Server) withZeros(d int, entries []dayEntry) []dayEntry {
	out := make([]dayEntry, 0, s.ws.cfg.Users)
	j := 0
	for u := range s.ws.cfg.Users {
		if j < len(entries) && entries[j].member == u {
			out = append(out, entries[j])
			j++
			continue
		}
		out = append(out, dayEntry{member: u, id: s.ws.rollupUserID(u), models: UserModels(u)})
	}
	return out
}

// userDay is one member's entry of a day. Callers hold s.mu.
func (s *Server) userDay(o Options, e dayEntry, d int, scopes map[string]bool) map[string]any {
	user := map[string]any{"id": e.id}
	if scopes[ScopeMembers] {
		user["email"] = email(e.member)
		switch {
		case o.NullOptional:
			user["email"] = nil
		case o.OmitOptional:
			delete(user, "email")
		}
	}
	models := map[string]any{}
	for j, m := range e.models {
		if !e.used[j] && !o.ZeroUsers {
			continue
		}
		u := e.usage[j]
		entry := map[string]any{
			"requests": u.Requests, "inputTokens": u.InputTokens, "outputTokens": u.OutputTokens,
			"cacheReadInputTokens": u.CacheReadInputTokens, "cacheCreationInputTokens": u.CacheCreationInputTokens,
			"totalTokens": u.TotalTokens(), "usage": u.USD(),
		}
		switch o.TotalTokens {
		case TotalTokensNoCache:
			entry["totalTokens"] = u.InputTokens + u.OutputTokens
		case TotalTokensAbsent:
			delete(entry, "totalTokens")
		}
		if o.ListPrice == ListPriceEverywhere {
			entry["estimatedProviderCostAtListPriceUSD"] = float64(s.estimates[(d*s.ws.cfg.Users+e.member)*2+j]) / UnitsPerUSD
		}
		models[Models[m].Name] = entry
	}
	out := map[string]any{
		"user": user,
		"metrics": map[string]any{
			"linesAdded": e.added, "linesDeleted": e.deleted, "linesModified": e.modified,
			"usage": float64(e.metricsUnits) / UnitsPerUSD,
		},
		"models": models,
	}
	if o.ExtraFields {
		out["x-standin"] = map[string]any{"unknown": true}
	}
	return out
}

// members serves GET /api/v2/workspace/members (Options.Members): a
// guess, every member on one page.
func (s *Server) members(w http.ResponseWriter, _ *http.Request) {
	ms := []any{}
	for u := range s.ws.cfg.Users {
		ms = append(ms, map[string]any{"id": s.ws.userID(u), "email": email(u)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"members": ms})
}
