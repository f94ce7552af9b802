package store

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/repomap"
)

// The repository label (repository.go): a thread's repository is worked
// out once, when the thread is first counted, and every item of the thread
// counts under it from then on, whatever the rules, the cap or the switch
// say later (counting rule 1).

// envOf is a thread's env naming remote as its first tree's repository.
func envOf(remote string) string {
	if remote == "" {
		return ""
	}
	return fmt.Sprintf(`"env":{"initial":{"trees":[{"uri":"file:///w","repository":{"type":"git","url":%q}},{"repository":{"url":"https://second.example/x"}}]}}`, remote)
}

// repoThread is thread id with a remote ("" for none) and one answer of n
// output tokens of model m1 per entry of outs.
func repoThread(id, remote string, outs ...int) string {
	msgs := []string{userMsg(0, "go")}
	for i, n := range outs {
		msgs = append(msgs, assistantMsg(i+1, stEndTurn, usageOf("m1", 10, n)))
	}
	return threadDoc(id, envOf(remote), msgs...)
}

type unreadable map[string]int

func repoStore(max int, u unreadable) *ThreadStore {
	repos := NewRepositories(func(r string) { u[r]++ })
	return NewThreadStore(StoreOptions{MaxLabelValues: max, Now: func() time.Time { return fixedNow }, Repositories: repos})
}

func mapper(t *testing.T, match, name string) *repomap.Mapper {
	t.Helper()
	r, err := repomap.Compile(match, name)
	if err != nil {
		t.Fatal(err)
	}
	return repomap.New(r)
}

func TestRepositoryPinnedPerThread(t *testing.T) {
	const web = "https://x-access-token:SECRET@github.com/acme/web.git"
	type step struct {
		// change is made before the step's snapshots are applied.
		change func(t *testing.T, s *ThreadStore)
		docs   []string
	}
	for _, tc := range []struct {
		name  string
		max   int
		steps []step
		want  map[string]int64 // output tokens by repository
	}{
		{
			name:  "every form of a remote is one value; the second tree is not the thread's",
			steps: []step{{docs: []string{repoThread("T-1", web, 100), repoThread("T-2", "git@github.com:acme/web.git", 10), repoThread("T-3", "ssh://git@github.com:22/acme/web/", 1)}}},
			want:  map[string]int64{"github.com/acme/web": 111},
		},
		{
			name: "a rule added after the first count moves nothing the thread counts",
			steps: []step{
				{docs: []string{repoThread("T-1", web, 100)}},
				{change: func(t *testing.T, s *ThreadStore) { s.repos.Set(true, mapper(t, "github.com/acme/.*", "acme")) },
					docs: []string{repoThread("T-1", web, 100, 20), repoThread("T-2", web, 5)}},
			},
			want: map[string]int64{"github.com/acme/web": 120, "acme": 5},
		},
		{
			name: "the switch turned off after the first count moves nothing; new threads have none",
			steps: []step{
				{docs: []string{repoThread("T-1", web, 100)}},
				{change: func(_ *testing.T, s *ThreadStore) { s.repos.Set(false, nil) },
					docs: []string{repoThread("T-1", web, 100, 20), repoThread("T-2", web, 5)}},
			},
			want: map[string]int64{"github.com/acme/web": 120, "": 5},
		},
		{
			name: "past the cap into other, and a raised cap moves nothing",
			max:  1,
			steps: []step{
				{docs: []string{repoThread("T-1", web, 100), repoThread("T-2", "https://gitlab.example.com/platform/infra/tools.git", 10)}},
				{change: func(_ *testing.T, s *ThreadStore) { s.labels.SetMax(10) },
					docs: []string{repoThread("T-2", "https://gitlab.example.com/platform/infra/tools.git", 10, 7), repoThread("T-3", "https://gitlab.example.com/platform/infra/tools.git", 1)}},
			},
			want: map[string]int64{"github.com/acme/web": 100, OtherValue: 17, "gitlab.example.com/platform/infra/tools": 1},
		},
		{
			name:  "no remote is no value and takes no place under the cap",
			max:   1,
			steps: []step{{docs: []string{repoThread("T-1", "", 100), repoThread("T-2", "/srv/git/web", 3), repoThread("T-3", web, 10)}}},
			want:  map[string]int64{"": 103, "github.com/acme/web": 10},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := repoStore(tc.max, unreadable{})
			for _, st := range tc.steps {
				if st.change != nil {
					st.change(t, s)
				}
				for _, doc := range st.docs {
					sum := summaryOf(t, doc)
					s.Apply("/d/"+sum.ID+".json", FileVersion{Size: int64(len(doc))}, sum)
				}
			}
			got := map[string]int64{}
			for k, v := range s.Snapshot().totals {
				if k.Fam == FamTokens && k.L2 == "output" {
					got[k.Repo] += v
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("output tokens by repository %v, want %v", got, tc.want)
			}
		})
	}
}

// Every family money is summed from carries the thread's repository, and
// no other does.
func TestRepositoryOnTheFamiliesMoneyIsSummedFrom(t *testing.T) {
	s := repoStore(0, unreadable{})
	s.SetPrices(embeddedPrices(t))
	doc := threadDoc("T-1", envOf("git@github.com:acme/web.git"), userMsg(0, "go"),
		`{"role":"assistant","messageId":1,"content":[{"type":"tool_use","id":"tu1","name":"edit_file","complete":true,"input":{"path":"a","old_str":"a","new_str":"b"}}],"state":`+stToolUse+`,"usage":`+usageOf("claude-sonnet-4-5-20250929", 10, 100)+`}`,
		`{"role":"user","messageId":2,"content":[{"type":"tool_result","toolUseID":"tu1","run":{"status":"done"}}]}`,
		assistantMsg(3, stEndTurn, usageOf("not-a-priced-model", 1, 2)))
	sum := summaryOf(t, doc)
	s.Apply("/d/T-1.json", FileVersion{}, sum)
	s.ApplyBilled("T-1", map[string]float64{"paid": 1})
	seen := map[Family]bool{}
	for k := range s.Snapshot().totals {
		if want := repoFamily[k.Fam]; (k.Repo == "github.com/acme/web") != want {
			t.Errorf("%+v: repository %q, want it on the series: %v", k, k.Repo, want)
		}
		seen[k.Fam] = true
	}
	if !repoFamily[FamTokensLong] {
		t.Error("tokens_long does not carry the label: the dollars of long-context tokens would lose it")
	}
	for _, f := range []Family{FamTokens, FamCost, FamUnpriced, FamPrompts, FamBilled, FamLines} {
		if !repoFamily[f] || !seen[f] {
			t.Errorf("%s: carries the label %v, counted %v; want both", f, repoFamily[f], seen[f])
		}
	}
	for _, f := range []Family{FamToolCalls, FamContextBucket, FamExchangeBucket, FamFinished, FamMessages} {
		if repoFamily[f] {
			t.Errorf("%s carries the repository label: unbounded series", f)
		}
	}
	snap := s.Snapshot()
	if n := snap.Threads[ThreadsKey{AgentMode: "medium", Repository: "github.com/acme/web"}]; n != 1 {
		t.Errorf("amp_threads %v", snap.Threads)
	}
}

// A thread whose remote cannot be read is counted once, however often it
// is read, by the reason.
func TestRepositoryUnreadableCountedOncePerThread(t *testing.T) {
	u := unreadable{}
	s := repoStore(0, u)
	for range 3 {
		for _, doc := range []string{repoThread("T-1", "/srv/git/web", 1), repoThread("T-2", "not a remote", 1), repoThread("T-3", "", 1), repoThread("T-4", "https://github.com/acme/web", 1)} {
			sum := summaryOf(t, doc)
			s.Apply("/d/"+sum.ID+".json", FileVersion{}, sum)
		}
	}
	if fmt.Sprint(u) != fmt.Sprint(unreadable{"invalid": 1, "local": 1}) {
		t.Errorf("unreadable %v", u)
	}
}

// The repository a thread was counted under survives a restart, through
// the whole state and through the deltas, and a thread of a state written
// before the label stays under none: its items do not count again under
// the repository its remote names.
func TestRepositorySurvivesRestart(t *testing.T) {
	const web = "git@github.com:acme/web.git"
	first, grown := repoThread("T-1", web, 100), repoThread("T-1", web, 100, 20)
	for _, tc := range []struct {
		name    string
		restore func(t *testing.T, s *ThreadStore) *ThreadStore
		want    map[string]int64
	}{
		{"whole state", func(t *testing.T, s *ThreadStore) *ThreadStore {
			r := repoStore(0, unreadable{})
			if err := r.Import(roundTrip(t, s.Export())); err != nil {
				t.Fatal(err)
			}
			return r
		}, map[string]int64{"github.com/acme/web": 120}},
		{"deltas", func(t *testing.T, s *ThreadStore) *ThreadStore {
			rp := &replay{threads: map[string]ThreadState{}, files: map[string]FileRecord{}}
			rp.add(t, s.ExportDelta())
			r := rp.restore(t)
			r.repos = NewRepositories(nil)
			return r
		}, map[string]int64{"github.com/acme/web": 120}},
		{"a state without the label", func(t *testing.T, s *ThreadStore) *ThreadStore {
			data, err := json.Marshal(s.Export())
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}
			for _, th := range raw["threads"].(map[string]any) {
				delete(th.(map[string]any), "repo")
			}
			data, _ = json.Marshal(raw)
			var old State
			if err := json.Unmarshal(data, &old); err != nil {
				t.Fatal(err)
			}
			r := repoStore(0, unreadable{})
			if err := r.Import(&old); err != nil {
				t.Fatal(err)
			}
			return r
		}, map[string]int64{"": 120}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := repoStore(0, unreadable{})
			s.Apply("/d/T-1.json", FileVersion{}, summaryOf(t, first))
			r := tc.restore(t, s)
			for repo := range tc.want {
				if th := r.Snapshot().Threads; len(th) != 1 || th[ThreadsKey{"medium", repo}] != 1 {
					t.Errorf("amp_threads after the restart %v, want the thread under %q", th, repo)
				}
			}
			// The rules changed meanwhile: they apply to new threads only.
			r.repos.Set(true, mapper(t, ".*", "renamed"))
			r.Apply("/d/T-1.json", FileVersion{Size: 1}, summaryOf(t, grown))
			got := map[string]int64{}
			for k, v := range r.Snapshot().totals {
				if k.Fam == FamTokens && k.L2 == "output" {
					got[k.Repo] += v
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("output tokens by repository after the restart %v, want %v", got, tc.want)
			}
		})
	}
}

// The collector's merge while the switch is off adds every repository's
// series up under none.
func TestWithoutRepositoryMerges(t *testing.T) {
	in := map[SeriesKey]int64{
		{FamTokens, "m1", "output", "a"}:   1,
		{FamTokens, "m1", "output", "b"}:   2,
		{FamTokens, "m1", "output", ""}:    4,
		{FamToolCalls, "Bash", "done", ""}: 8,
	}
	out := WithoutRepository(in)
	if len(out) != 2 || out[SeriesKey{FamTokens, "m1", "output", ""}] != 7 || out[SeriesKey{FamToolCalls, "Bash", "done", ""}] != 8 {
		t.Errorf("%v", out)
	}
}

// One thread read from a file, from the Amp server and from a stream-json
// run counts once, under one repository value, in whichever order the
// sources see it (counting rule 12): the source that counts it carries the
// repository its thread names; a stream-json run counts its messages and
// tokens only when neither the file nor the server does.
func TestRepositoryOneThreadThreeSources(t *testing.T) {
	doc := repoThread("T-1", "https://x-access-token:SECRET@github.com/acme/web.git", 100)
	for _, order := range [][]string{
		{"file", "server", "stream"},
		{"server", "file", "stream"},
		{"stream", "server", "file"},
		{"stream", "file", "server"},
	} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			owners := NewOwners()
			labels := NewLabelCap(100, nil)
			repos := NewRepositories(nil)
			local := NewThreadStore(StoreOptions{Labels: labels, Repositories: repos})
			server := NewThreadStore(StoreOptions{Labels: labels, Repositories: repos})
			local.SetClaim(owners, SourceThreads)
			server.SetClaim(owners, SourceAmpServer)
			stream := NewStreamStore(labels, nil)
			stream.EnableAmpServerDedupe(owners)
			for _, src := range order {
				switch src {
				case "file":
					local.Apply("/d/T-1.json", FileVersion{}, summaryOf(t, doc))
				case "server":
					server.Apply(AmpServerPath("T-1"), FileVersion{AmpServerV: 1}, summaryOf(t, doc))
					stream.AmpServerSynced()
				case "stream":
					stream.Apply(run("T-1"))
				}
			}
			stream.AmpServerSynced()
			stream.AmpServerSynced()
			got := map[string]int64{}
			for _, totals := range []map[SeriesKey]int64{local.Snapshot().totals, server.Snapshot().totals, stream.Snapshot().totals} {
				for k, v := range totals {
					if k.Fam == FamTokens {
						got[k.Repo] += v
					}
				}
			}
			if want := map[string]int64{"github.com/acme/web": 110}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("tokens by repository %v, want %v (counted once, from the file or the server)", got, want)
			}
		})
	}
}
