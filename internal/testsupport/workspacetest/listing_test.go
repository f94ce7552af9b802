package workspacetest

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func ids(rows []map[string]any) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r["id"].(string))
	}
	return out
}

// TestListingPages: pages of 100 in first-sync order, each main thread
// before its sub-threads, the same rows whatever the page size, DESC the
// reverse, and no nextCursor on the last page.
func TestListingPages(t *testing.T) {
	s := New(Config{Seed: 9, Users: 4, Threads: 250, Days: 10}, Options{})
	defer s.Close()
	c := newClient(t, s)
	asc, pages := c.listAll(nil)
	tt := s.ThreadTotals(false)
	if len(asc) != tt.MainThreads+tt.SubThreads || pages != (len(asc)+99)/100 {
		t.Fatalf("%d rows in %d pages; %d threads", len(asc), pages, tt.MainThreads+tt.SubThreads)
	}
	var last time.Time
	for _, r := range asc {
		fs, err := time.Parse(time.RFC3339, r["firstSyncedAt"].(string))
		if err != nil || fs.Before(last) {
			t.Fatalf("row %v out of order (%v)", r, err)
		}
		last = fs
	}
	desc, _ := c.listAll(url.Values{"sort": {"DESC"}})
	slices.Reverse(desc)
	if !slices.Equal(ids(asc), ids(desc)) {
		t.Errorf("DESC is not ASC reversed")
	}
	var small []map[string]any
	q := url.Values{"limit": {"7"}}
	for {
		m := c.object("/api/v2/threads", q)
		for _, x := range m["threads"].([]any) {
			small = append(small, x.(map[string]any))
		}
		next, ok := m["nextCursor"].(string)
		if !ok {
			break
		}
		q.Set("cursor", next)
	}
	if !slices.Equal(ids(small), ids(asc)) {
		t.Errorf("pages of 7 list other rows than pages of 100")
	}
	s.Update(func(o *Options) { o.SortDescByDefault = true })
	m := c.object("/api/v2/threads", url.Values{"limit": {"1"}})
	if got := m["threads"].([]any)[0].(map[string]any)["id"]; got != asc[len(asc)-1]["id"] {
		t.Errorf("DESC by default starts with %v", got)
	}
}

// TestListingParameters: bounds of limit, an empty or foreign cursor,
// sort values, timestamps, renamed parameters and StrictParams.
func TestListingParameters(t *testing.T) {
	s := New(Config{Seed: 9, Users: 4, Threads: 250, Days: 10}, Options{})
	defer s.Close()
	c := newClient(t, s)
	for _, tc := range []struct {
		name  string
		opts  Options
		q     url.Values
		want  int
		count int // rows on the page when 200 (-1: any)
	}{
		{"default limit", Options{}, nil, 200, 50},
		{"limit 100", Options{}, url.Values{"limit": {"100"}}, 200, 100},
		{"limit 0", Options{}, url.Values{"limit": {"0"}}, 400, 0},
		{"limit 101", Options{}, url.Values{"limit": {"101"}}, 400, 0},
		{"limit 101 clamped", Options{ClampLimit: true}, url.Values{"limit": {"101"}}, 200, 100},
		{"limit fraction", Options{}, url.Values{"limit": {"1.5"}}, 400, 0},
		{"empty cursor", Options{}, url.Values{"cursor": {""}}, 400, 0},
		{"made-up cursor", Options{}, url.Values{"cursor": {"abc"}}, 400, 0},
		{"sort lower case", Options{}, url.Values{"sort": {"asc"}}, 400, 0},
		{"after not a time", Options{}, url.Values{"after": {"yesterday"}}, 400, 0},
		{"unknown ignored", Options{}, url.Values{"pageSize": {"3"}}, 200, 50},
		{"unknown refused", Options{StrictParams: true}, url.Values{"pageSize": {"3"}}, 400, 0},
		{"renamed limit", Options{Params: ParamNames{Limit: "pageSize"}}, url.Values{"pageSize": {"3"}}, 200, 3},
		{"old name ignored", Options{Params: ParamNames{Limit: "pageSize"}}, url.Values{"limit": {"3"}}, 200, 50},
		{"old name refused", Options{StrictParams: true, Params: ParamNames{Limit: "pageSize"}}, url.Values{"limit": {"3"}}, 400, 0},
		{"renamed sort", Options{Params: ParamNames{Sort: "order"}}, url.Values{"order": {"sideways"}}, 400, 0},
		{"renamed after", Options{Params: ParamNames{After: "since"}}, url.Values{"since": {"soon"}}, 400, 0},
		{"renamed before", Options{Params: ParamNames{Before: "until"}}, url.Values{"until": {"soon"}}, 400, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.SetOptions(tc.opts)
			status, _, b := c.get("/api/v2/threads", tc.q)
			if status != tc.want {
				t.Fatalf("%d %s, want %d", status, b, tc.want)
			}
			if status == 200 {
				m := c.object("/api/v2/threads", tc.q)
				if n := len(m["threads"].([]any)); n != tc.count {
					t.Errorf("%d rows, want %d", n, tc.count)
				}
			} else if !strings.HasPrefix(string(b), `{"error":`) {
				t.Errorf("error body %s", b)
			}
		})
	}
	s.SetOptions(Options{Params: ParamNames{Cursor: "page", NextCursor: "next"}})
	m := c.object("/api/v2/threads", url.Values{"limit": {"5"}})
	next, ok := m["next"].(string)
	if _, old := m["nextCursor"]; !ok || old {
		t.Fatalf("renamed nextCursor: %v", m)
	}
	m2 := c.object("/api/v2/threads", url.Values{"limit": {"5"}, "page": {next}})
	if m2["threads"].([]any)[0].(map[string]any)["id"] == m["threads"].([]any)[0].(map[string]any)["id"] {
		t.Errorf("the renamed cursor was not followed")
	}
}

// TestListingFilters: after and before bound firstSyncedAt, exclusive
// unless FilterInclusive; a row listed without firstSyncedAt matches a
// filter only with FilterMatchesUnsynced.
func TestListingFilters(t *testing.T) {
	s := New(Config{Seed: 9, Users: 4, Threads: 250, Days: 10}, Options{})
	defer s.Close()
	c := newClient(t, s)
	all, _ := c.listAll(nil)
	stamps := func(rows []map[string]any) []string {
		var out []string
		for _, r := range rows {
			fs, _ := r["firstSyncedAt"].(string)
			out = append(out, fs)
		}
		return out
	}
	a, b := all[40]["firstSyncedAt"].(string), all[90]["firstSyncedAt"].(string)
	for _, tc := range []struct {
		name     string
		opts     Options
		q        url.Values
		from, to int // all[from:to]
	}{
		{"after", Options{}, url.Values{"after": {a}}, 41, len(all)},
		{"after inclusive", Options{FilterInclusive: true}, url.Values{"after": {a}}, 40, len(all)},
		{"before", Options{}, url.Values{"before": {b}}, 0, 90},
		{"both inclusive", Options{FilterInclusive: true}, url.Values{"after": {a}, "before": {b}}, 40, 91},
		{"both, DESC", Options{}, url.Values{"after": {a}, "before": {b}, "sort": {"DESC"}}, 41, 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.SetOptions(tc.opts)
			got, _ := c.listAll(tc.q)
			if tc.q.Get("sort") == "DESC" {
				slices.Reverse(got)
			}
			if !slices.Equal(stamps(got), stamps(all[tc.from:tc.to])) {
				t.Errorf("%d rows, want rows %d to %d", len(got), tc.from, tc.to)
			}
		})
	}
	for _, match := range []bool{false, true} {
		s.SetOptions(Options{UnsyncedEvery: 10, FilterMatchesUnsynced: match})
		unfiltered, _ := c.listAll(nil)
		unsynced := 0
		for _, r := range unfiltered {
			if _, ok := r["firstSyncedAt"]; !ok {
				unsynced++
			}
		}
		// Rows after all[40] are after the bound; the unsynced ones match
		// the filter wherever they are, but only with
		// FilterMatchesUnsynced.
		bound := all[40]["firstSyncedAt"].(string)
		want, early := 0, 0
		for j, r := range unfiltered {
			_, synced := r["firstSyncedAt"]
			switch {
			case !synced && j <= 40:
				early++
				if match {
					want++
				}
			case !synced && match, synced && j > 40:
				want++
			}
		}
		for _, q := range []url.Values{{"after": {bound}}, {"after": {bound}, "sort": {"DESC"}}} {
			filtered, _ := c.listAll(q)
			if unsynced != 25 || early == 0 || len(filtered) != want {
				t.Errorf("match %t, %v: %d unsynced (%d up to the bound), %d rows, want %d", match, q, unsynced, early, len(filtered), want)
			}
		}
	}
}

// TestListingShapes: each shape switch changes the rows as it says.
func TestListingShapes(t *testing.T) {
	s := New(Config{Seed: 9, Users: 4, Threads: 60, Days: 10}, Options{})
	defer s.Close()
	c := newClient(t, s)
	type check func(t *testing.T, page []any, rows []map[string]any)
	mains := func(rows []map[string]any) (main, sub []map[string]any) {
		for _, r := range rows {
			if _, ok := r["mainThreadID"]; ok {
				sub = append(sub, r)
			} else {
				main = append(main, r)
			}
		}
		return main, sub
	}
	nested := func(rows []map[string]any) (n int) {
		for _, r := range rows {
			subs, _ := r["subThreads"].([]any)
			for _, x := range subs {
				if x != nil {
					n++
				}
			}
		}
		return n
	}
	subs := s.ThreadTotals(false).SubThreads
	for _, tc := range []struct {
		name  string
		opts  Options
		check check
	}{
		{"defaults", Options{}, func(t *testing.T, page []any, rows []map[string]any) {
			main, sub := mains(rows)
			if len(sub) != subs || nested(main) != subs || slices.Contains(page, nil) {
				t.Errorf("%d sub rows, %d nested, want %d each", len(sub), nested(main), subs)
			}
			for _, r := range rows {
				for _, k := range []string{"createdAt", "updatedAt", "firstSyncedAt", "title", "repositories"} {
					if _, ok := r[k]; !ok {
						t.Fatalf("no %s in %v", k, r)
					}
				}
				if _, ok := r["parentThreadID"]; ok {
					t.Fatalf("parentThreadID by default")
				}
			}
		}},
		{"rows only", Options{SubThreads: SubThreadsRowsOnly}, func(t *testing.T, _ []any, rows []map[string]any) {
			main, sub := mains(rows)
			if len(sub) != subs || nested(main) != 0 {
				t.Errorf("%d sub rows, %d nested", len(sub), nested(main))
			}
		}},
		{"nested only", Options{SubThreads: SubThreadsNestedOnly}, func(t *testing.T, _ []any, rows []map[string]any) {
			main, sub := mains(rows)
			if len(sub) != 0 || nested(main) != subs {
				t.Errorf("%d sub rows, %d nested", len(sub), nested(main))
			}
		}},
		{"nested as ids", Options{SubThreadsAsIDs: true}, func(t *testing.T, _ []any, rows []map[string]any) {
			n := 0
			for _, r := range rows {
				ss, _ := r["subThreads"].([]any)
				n += len(ss)
				for _, x := range ss {
					if _, ok := x.(string); !ok {
						t.Fatalf("a nested sub-thread %v", x)
					}
				}
			}
			if n != subs {
				t.Errorf("%d nested ids, want %d", n, subs)
			}
		}},
		{"null items", Options{NullItems: true}, func(t *testing.T, page []any, rows []map[string]any) {
			if page[len(page)-1] != nil {
				t.Errorf("no null row")
			}
			for _, r := range rows {
				if rs := r["repositories"].([]any); rs[len(rs)-1] != nil {
					t.Fatalf("no null repository in %v", r)
				}
				if ss, ok := r["subThreads"].([]any); ok && ss[len(ss)-1] != nil {
					t.Fatalf("no null sub-thread in %v", r)
				}
			}
		}},
		{"optional left out", Options{OmitOptional: true, ParentThreadID: true}, func(t *testing.T, _ []any, rows []map[string]any) {
			_, sub := mains(rows)
			for _, r := range rows {
				for _, k := range []string{"createdAt", "updatedAt", "firstSyncedAt", "title", "repositories", "subThreads", "parentThreadID"} {
					if _, ok := r[k]; ok {
						t.Fatalf("%s in %v", k, r)
					}
				}
			}
			if len(sub) != subs || sub[0]["creatorUserID"] == nil {
				t.Errorf("sub-threads without mainThreadID or creator")
			}
		}},
		{"optional null", Options{NullOptional: true}, func(t *testing.T, _ []any, rows []map[string]any) {
			for _, r := range rows {
				if v, ok := r["title"]; !ok || v != nil {
					t.Fatalf("title %v", r["title"])
				}
			}
		}},
		{"unknown fields", Options{ExtraFields: true}, func(t *testing.T, _ []any, rows []map[string]any) {
			if rows[0]["x-standin"] == nil || rows[0]["visibility"] != "workspace" {
				t.Errorf("no unknown fields in %v", rows[0])
			}
		}},
		{"parentThreadID", Options{ParentThreadID: true}, func(t *testing.T, _ []any, rows []map[string]any) {
			_, sub := mains(rows)
			for _, r := range sub {
				if r["parentThreadID"] != r["mainThreadID"] {
					t.Fatalf("%v", r)
				}
			}
		}},
		{"repositories as strings", Options{RepositoriesAsStrings: true}, func(t *testing.T, _ []any, rows []map[string]any) {
			n := 0
			for _, r := range rows {
				for _, x := range r["repositories"].([]any) {
					if _, ok := x.(string); !ok {
						t.Fatalf("repository %v", x)
					}
					n++
				}
			}
			if n == 0 {
				t.Errorf("no repositories")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.SetOptions(tc.opts)
			var page []any
			var rows []map[string]any
			q := url.Values{"limit": {"100"}}
			for {
				m := c.object("/api/v2/threads", q)
				p := m["threads"].([]any)
				page = append(page, p...)
				for _, x := range p {
					if x != nil {
						rows = append(rows, x.(map[string]any))
					}
				}
				next, _ := m["nextCursor"].(string)
				if next == "" {
					break
				}
				q.Set("cursor", next)
			}
			tc.check(t, page, rows)
		})
	}
	s.SetOptions(Options{})
	if status, _, _ := c.get("/api/v2/threads/"+s.ThreadID(1, 0), nil); status != http.StatusNotFound {
		t.Errorf("GET of a thread: %d (the API has none)", status)
	}
}
