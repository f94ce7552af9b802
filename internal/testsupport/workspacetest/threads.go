package workspacetest

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"time"
)

// timeFormat is RFC 3339 with milliseconds, as the schema's examples.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func stamp(t time.Time) string { return t.UTC().Format(timeFormat) }

// unknownParam is the first query parameter not in known ("" for none).
func unknownParam(q url.Values, known ...string) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(known, k) {
			return k
		}
	}
	return ""
}

// pos is a row of the listing: main thread i, or its k-th sub-thread.
type pos struct{ i, k int }

func encodeCursor(p pos, desc bool) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "c1:%d:%d:%t", p.i, p.k, desc))
}

func decodeCursor(c string) (p pos, desc bool, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return pos{}, false, false
	}
	if _, err := fmt.Sscanf(string(b), "c1:%d:%d:%t", &p.i, &p.k, &desc); err != nil {
		return pos{}, false, false
	}
	return p, desc, true
}

// list serves GET /api/v2/threads.
func (s *Server) list(w http.ResponseWriter, r *http.Request, scopes map[string]bool) {
	o := s.Options()
	p := o.Params
	q := r.URL.Query()
	if o.StrictParams {
		if k := unknownParam(q, p.Limit, p.Cursor, p.After, p.Before, p.Sort); k != "" {
			writeError(w, http.StatusBadRequest, "unknown parameter "+k)
			return
		}
	}
	limit := 50
	if v, ok := q[p.Limit]; ok {
		n, err := strconv.Atoi(v[0])
		switch {
		case err != nil || n < 1:
			writeError(w, http.StatusBadRequest, "limit must be an integer from 1 to 100")
			return
		case n > 100 && !o.ClampLimit:
			writeError(w, http.StatusBadRequest, "limit must be an integer from 1 to 100")
			return
		}
		limit = min(n, 100)
	}
	var after, before time.Time
	for _, b := range []struct {
		name string
		t    *time.Time
	}{{p.After, &after}, {p.Before, &before}} {
		if v, ok := q[b.name]; ok {
			t, err := time.Parse(time.RFC3339Nano, v[0])
			if err != nil {
				writeError(w, http.StatusBadRequest, b.name+" must be an ISO-8601 timestamp")
				return
			}
			*b.t = t
		}
	}
	desc := o.SortDescByDefault
	if v, ok := q[p.Sort]; ok {
		switch v[0] {
		case "ASC":
			desc = false
		case "DESC":
			desc = true
		default:
			writeError(w, http.StatusBadRequest, "sort must be ASC or DESC")
			return
		}
	}
	n := s.ws.cfg.Threads
	// A filter that matches the threads listed without firstSyncedAt
	// matches them anywhere in the listing: no shortcut by sync time.
	bounded := o.UnsyncedEvery <= 0 || !o.FilterMatchesUnsynced
	var start pos
	if v, ok := q[p.Cursor]; ok {
		c, cdesc, ok := decodeCursor(v[0])
		if !ok || c.i < 0 || c.i >= n || cdesc != desc {
			writeError(w, http.StatusBadRequest, "invalid cursor")
			return
		}
		start = c
	} else if desc {
		start = pos{n - 1, maxSubs}
		if !before.IsZero() && bounded {
			i := sort.Search(n, func(i int) bool { return s.ws.thread(i, 0).firstSynced.After(before) })
			start = pos{min(i, n-1), maxSubs}
		}
	} else if !after.IsZero() && bounded {
		i := sort.Search(n, func(i int) bool { return s.ws.thread(i, 0).firstSynced.After(after) })
		start = pos{max(i-1, 0), 0}
	}
	match := func(t thread, unsynced bool) bool {
		if after.IsZero() && before.IsZero() {
			return true
		}
		if unsynced {
			return o.FilterMatchesUnsynced
		}
		fs := t.firstSynced
		if !after.IsZero() && !(fs.After(after) || o.FilterInclusive && fs.Equal(after)) {
			return false
		}
		return before.IsZero() || fs.Before(before) || o.FilterInclusive && fs.Equal(before)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	page := []any{}
	var next *pos
	done := false
	for i := start.i; i >= 0 && i < n && !done; {
		main := s.threadNow(i, 0)
		ks := []int{0}
		if o.SubThreads != SubThreadsNestedOnly {
			for k := 1; k <= main.subs; k++ {
				ks = append(ks, k)
			}
		}
		if desc {
			slices.Reverse(ks)
		}
		for _, k := range ks {
			if i == start.i && (!desc && k < start.k || desc && k > start.k) {
				continue
			}
			if len(page) == limit {
				next, done = &pos{i, k}, true
				break
			}
			t := main
			if k > 0 {
				t = s.threadNow(i, k)
			}
			unsynced := k == 0 && o.UnsyncedEvery > 0 && i%o.UnsyncedEvery == 0
			if match(t, unsynced) {
				page = append(page, s.summaryLocked(o, t, scopes, unsynced, true))
			}
		}
		if done {
			break
		}
		fs := main.firstSynced
		if bounded && (!desc && !before.IsZero() && !fs.Before(before) || desc && !after.IsZero() && !fs.After(after)) {
			break
		}
		if desc {
			i--
		} else {
			i++
		}
	}
	if o.NullItems {
		page = append(page, nil)
	}
	body := map[string]any{"threads": page}
	if next != nil {
		body[p.NextCursor] = encodeCursor(*next, desc)
	} else if o.NullOptional {
		body[p.NextCursor] = nil
	}
	writeJSON(w, http.StatusOK, body)
}

// summaryLocked is a thread's ThreadSummary. Callers hold s.mu.
func (s *Server) summaryLocked(o Options, t thread, scopes map[string]bool, unsynced, nest bool) map[string]any {
	e := map[string]any{
		"id": t.id, "creatorUserID": s.ws.userID(t.creator),
		"createdAt": stamp(t.created), "updatedAt": stamp(t.last), "firstSyncedAt": stamp(t.firstSynced),
	}
	optional := []string{"createdAt", "updatedAt", "firstSyncedAt"}
	if unsynced {
		delete(e, "firstSyncedAt")
	}
	if scopes[ScopeThreadsContents] {
		if t.sub == 0 {
			e["title"] = fmt.Sprintf("Thread %d", t.index)
		} else {
			e["title"] = fmt.Sprintf("Sub-thread %d of thread %d", t.sub, t.index)
		}
		repos := []any{}
		for _, ri := range t.repos {
			if o.RepositoriesAsStrings {
				repos = append(repos, Repositories[ri])
			} else {
				repos = append(repos, map[string]any{"url": Repositories[ri], "dir": fmt.Sprintf("/work/repo%d", ri)})
			}
		}
		if o.NullItems {
			repos = append(repos, nil)
		}
		e["repositories"] = repos
		optional = append(optional, "title", "repositories")
	}
	if t.sub > 0 {
		e["mainThreadID"] = s.ws.threadID(t.index, 0)
		if o.ParentThreadID {
			e["parentThreadID"] = e["mainThreadID"]
			optional = append(optional, "parentThreadID")
		}
	} else if nest {
		subs := []any{}
		if o.SubThreads != SubThreadsRowsOnly {
			for k := 1; k <= t.subs; k++ {
				if o.SubThreadsAsIDs {
					subs = append(subs, s.ws.threadID(t.index, k))
				} else {
					subs = append(subs, s.summaryLocked(o, s.threadNow(t.index, k), scopes, false, false))
				}
			}
		}
		if o.NullItems {
			subs = append(subs, nil)
		}
		e["subThreads"] = subs
		optional = append(optional, "subThreads")
	}
	for _, k := range optional {
		switch {
		case o.NullOptional:
			e[k] = nil
		case o.OmitOptional:
			delete(e, k)
		}
	}
	if o.ExtraFields {
		e["visibility"] = "workspace"
		e["x-standin"] = map[string]any{"unknown": true}
	}
	return e
}

// pastWindowLocked tells whether a thread's usage is past the retention
// window. Callers hold s.mu.
func (s *Server) pastWindowLocked(t thread) bool {
	ref := t.created
	switch s.opts.RetentionFrom {
	case AgeFromFirstSynced:
		ref = t.firstSynced
	case AgeFromLastActivity:
		ref = t.last
	}
	return s.ws.cfg.Now.Sub(ref) > time.Duration(s.opts.RetentionDays)*24*time.Hour
}

// usage serves GET /api/v2/threads/{threadID}/usage.
func (s *Server) usage(w http.ResponseWriter, id string) {
	s.mu.Lock()
	o := s.opts
	i, k, ok := s.ws.parseThreadID(id)
	if ok && k > 0 {
		switch o.SubThreadUsage {
		case SubUsageNotFound:
			ok = false
		case SubUsageParent:
			k = 0
		}
	}
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "thread not found")
		return
	}
	t := s.threadNow(i, k)
	if s.pastWindowLocked(t) {
		s.mu.Unlock()
		writeError(w, o.PastWindowStatus, o.PastWindowError)
		return
	}
	var byModel map[int]Usage
	var subs []thread
	if k == 0 {
		byModel, subs = s.usageOf(t)
	} else {
		byModel = map[int]Usage{}
		for _, r := range t.records {
			u := byModel[r.model]
			u.Add(r.u)
			byModel[r.model] = u
		}
	}
	estimate := map[int]int64{}
	for _, th := range append([]thread{t}, subs...) {
		for _, r := range th.records {
			estimate[r.model] += r.estimate
		}
	}
	s.mu.Unlock()
	subIDs := []any{}
	for _, st := range subs {
		subIDs = append(subIDs, st.id)
	}
	ms := make([]int, 0, len(byModel))
	for m := range byModel {
		ms = append(ms, m)
	}
	slices.Sort(ms)
	var total, totalEst int64
	models := []any{}
	for _, m := range ms {
		u := byModel[m]
		total += u.Units
		totalEst += estimate[m]
		e := map[string]any{
			"provider": Models[m].Provider, "model": Models[m].Name, "requests": u.Requests,
			"inputTokens": u.InputTokens, "outputTokens": u.OutputTokens,
			"cacheReadInputTokens": u.CacheReadInputTokens, "cacheCreationInputTokens": u.CacheCreationInputTokens,
			"usage": u.USD(),
		}
		if o.ListPrice == ListPriceOnModels || o.ListPrice == ListPriceEverywhere {
			e["estimatedProviderCostAtListPriceUSD"] = float64(estimate[m]) / UnitsPerUSD
		}
		if o.ExtraFields {
			e["reasoningTokens"] = 0
		}
		models = append(models, e)
	}
	if o.NullItems {
		models = append(models, nil)
		subIDs = append(subIDs, nil)
	}
	body := map[string]any{"threadID": id, "subThreadIDs": subIDs, "usage": float64(total) / UnitsPerUSD, "models": models}
	if o.ThreadUsageRounded {
		body["usage"] = math.Round(float64(total)*100/UnitsPerUSD) / 100
	}
	if len(subIDs) == 0 {
		switch {
		case o.NullOptional:
			body["subThreadIDs"] = nil
		case o.OmitOptional:
			delete(body, "subThreadIDs")
		}
	}
	if o.ListPrice == ListPriceOnThread || o.ListPrice == ListPriceEverywhere {
		body["estimatedProviderCostAtListPriceUSD"] = float64(totalEst) / UnitsPerUSD
	}
	if o.ExtraFields {
		body["x-standin"] = map[string]any{"unknown": true}
	}
	writeJSON(w, http.StatusOK, body)
}
