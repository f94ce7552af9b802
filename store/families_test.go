package store

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadtest"
	"github.com/amp-exporter/amp-exporter/parser/amyturn"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// TestEveryFamilyIsInTheTable reads the package's source: every family a
// store can produce is a constant of type family (or a conversion of a
// literal), and each must have exactly one row in the families table, with
// an owner and a scale. A family missing there would make Import refuse a
// state that holds it.
func TestEveryFamilyIsInTheTable(t *testing.T) {
	rows := map[Family]int{}
	for _, f := range families {
		rows[f.name]++
		if f.owners == 0 {
			t.Errorf("family %q has no owner", f.name)
		}
		if f.scale < 1 {
			t.Errorf("family %q has scale %v", f.name, f.scale)
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	declared := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				if id, ok := n.Type.(*ast.Ident); !ok || id.Name != "Family" {
					return true
				}
				for _, v := range n.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok {
						t.Errorf("%s: family constant that is not a literal", fset.Position(v.Pos()))
						continue
					}
					s, _ := strconv.Unquote(lit.Value)
					declared++
					if rows[Family(s)] != 1 {
						t.Errorf("%s: family %q has %d rows in the families table, want 1", fset.Position(lit.Pos()), s, rows[Family(s)])
					}
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "Family" && len(n.Args) == 1 {
					if lit, ok := n.Args[0].(*ast.BasicLit); ok {
						t.Errorf("%s: family(%s) outside the table", fset.Position(lit.Pos()), lit.Value)
					}
				}
			}
			return true
		})
	}
	if declared != len(families) {
		t.Errorf("%d family constants, %d rows in the table", declared, len(families))
	}
	for name, sets := range map[string]map[Family]bool{"threads": knownFamilies, "streams": streamFamilies, "amy": amyFamilies} {
		if len(sets) == 0 {
			t.Errorf("no families for the %s store", name)
		}
	}
	if familyScale[FamCost] != 1e10 || scaleOf(FamAmyTTFTSum) != 1e3 || scaleOf(FamMessages) != 1 {
		t.Error("scales not derived from the table")
	}
}

// TestEveryProducedFamilyRestores fills each store with everything it
// counts and checks that the families its state holds are its own in the
// table, and that the state restores.
func TestEveryProducedFamilyRestores(t *testing.T) {
	threads := fixtureStore(t, StoreOptions{})
	threads.Apply(AmpServerPath("T-billed"), FileVersion{AmpServerV: 1}, threadtest.Summary(threadtest.Thread{ID: "T-billed",
		Tokens: map[string]thread.Tokens{"claude-sonnet-4-5": {Input: 10, Output: 5}}}))
	threads.ApplyBilled("T-billed", map[string]float64{"paid": 0.5})
	st := threads.Export()
	seen := map[Family]bool{}
	for key, ts := range st.Threads {
		for _, sv := range append(append([]SeriesValue{}, ts.Series...), ts.Retired...) {
			seen[Family(sv.Family)] = true
			if !knownFamilies[Family(sv.Family)] {
				t.Errorf("thread %q: family %q is not the threads store's in the table", key, sv.Family)
			}
		}
	}
	if !seen[FamBilled] || !seen[FamCost] || !seen[FamTokensLong] && !seen[FamTokens] {
		t.Errorf("threads store produced only %v", seen)
	}
	if err := NewThreadStore(StoreOptions{}).Import(roundTrip(t, st)); err != nil {
		t.Errorf("threads state refused: %v", err)
	}

	streams := streamStore(t)
	sst := streams.Export()
	for _, sv := range sst.Series {
		if !streamFamilies[Family(sv.Family)] {
			t.Errorf("stream family %q is not the stream store's in the table", sv.Family)
		}
	}
	if err := NewStreamStore(NewLabelCap(100, nil), nil).Import(sst); err != nil {
		t.Errorf("stream state refused: %v", err)
	}

	as := amyFixtureStore(t)
	ast := as.Export()
	n := 0
	for up, series := range ast.Upstreams {
		for _, sv := range series {
			n++
			if !amyFamilies[Family(sv.Family)] {
				t.Errorf("upstream %q: family %q is not the Amy store's in the table", up, sv.Family)
			}
		}
	}
	if n < 10 {
		t.Errorf("Amy store produced only %d series", n)
	}
	if err := NewAmyStore(NewLabelCap(100, nil), nil).Import(ast); err != nil {
		t.Errorf("Amy state refused: %v", err)
	}
}

// amyFixtureStore replays the recorded turn streams into an Amy store,
// each twice (the replays are duplicates), with the failures it counts.
func amyFixtureStore(t *testing.T) *AmyStore {
	t.Helper()
	s := NewAmyStore(NewLabelCap(100, nil), func() time.Time { return fixedNow })
	s.SetUpstreams([]string{"main"})
	files, _ := filepath.Glob("../parser/amyturn/testdata/*.sse")
	if len(files) < 2 {
		t.Fatal("no recorded turn streams")
	}
	dec := amyturn.NewDecoder()
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		turn := "turn-" + strconv.Itoa(i)
		for range 2 {
			for _, block := range bytes.Split(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
				var id, event, payload string
				for _, line := range strings.Split(string(block), "\n") {
					field, value, _ := strings.Cut(line, ":")
					value = strings.TrimPrefix(value, " ")
					switch field {
					case "id":
						id = value
					case "event":
						event = value
					case "data":
						payload += value
					}
				}
				if event == "" {
					continue
				}
				rec, err := dec.Decode(event, payload)
				if err != nil {
					s.BadEvent("main", turn, id, fixedNow)
					continue
				}
				s.Observe("main", turn, id, rec, fixedNow)
			}
		}
	}
	s.TooLarge("main", "turn-big", "1", fixedNow)
	s.Reconnected("main", ReconnectEOF)
	s.GaveUp("main", "turn-lost", GivenUpTimeout)
	return s
}

// The items flag of the families table is exactly the families a thread's
// items give (what covers compares): counting generated threads and the
// parser's fixtures gives every
// flagged family (but two made by hand below), and nothing else but the dollars that follow the tokens
// (and no_usage, below).
func TestItemFamiliesAreThoseItemsGive(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	s.SetPrices(nil)
	p := thread.NewParser()
	g := threadgen.New(threadgen.Options{Threads: 30, TotalBytes: 2 << 20, Seed: 3})
	docs, _ := filepath.Glob("../parser/thread/testdata/*.json")
	given := map[Family]bool{}
	for i := range g.Len() + len(docs) {
		var b []byte
		if i < g.Len() {
			_, b = g.Thread(i)
		} else if b, _ = os.ReadFile(docs[i-g.Len()]); b == nil {
			continue
		}
		th, err := p.ParseBytes(b)
		if err != nil {
			continue
		}
		for k := range s.Count(thread.Summarize(th)) {
			given[k.Fam] = true
		}
	}
	// Tokens past the long-context threshold, which neither makes.
	long := thread.FromItems("T-long", "smart", []thread.Item{{Key: thread.ItemKey(thread.ItemMessage, 1),
		Role: thread.RoleAssistant, Model: "m", StopReason: "end_turn",
		Tokens: thread.Tokens{Input: 300_000}, Over: thread.Tokens{Input: 100_000}}})
	for k := range s.Count(long) {
		given[k.Fam] = true
	}
	// An edit left uncounted, which takes a thread past the parse's diff
	// budget (parser/thread's TestDiffWorkPerParseIsBounded makes one).
	uncounted := thread.FromItems("T-uncounted", "smart", []thread.Item{{Key: toolKey(1),
		Tool: "Edit", Status: thread.StatusDone, Uncounted: thread.UncountedDiffBudget}})
	for k := range s.Count(uncounted) {
		given[k.Fam] = true
	}
	// A shell call that committed, opened a pull request and pushed
	// (once and in vain), which the generator writes only when asked to.
	shipped := thread.FromItems("T-shipped", "smart", []thread.Item{{Key: toolKey(1),
		Tool: "Bash", Status: thread.StatusDone, Shell: thread.ShellSuccess, Commits: 1, PullRequests: 1, Pushes: 1, FailedPushes: 1}})
	for k := range s.Count(shipped) {
		given[k.Fam] = true
	}
	// And at the faster speeds, which the generator writes only when asked
	// to: priced, so that the premium is given too.
	s.SetPrices(pricing.New(nil, "test", "test", map[string]pricing.Price{"gpt-6-astra": {Input: 1, Output: 2}}))
	for _, speed := range []thread.Speed{thread.SpeedFast, thread.SpeedPlaid} {
		fast := thread.FromItems("T-fast", "smart", []thread.Item{{Key: thread.ItemKey(thread.ItemMessage, 1),
			Role: thread.RoleAssistant, Model: "gpt-6-astra", StopReason: "end_turn", Speed: speed,
			Tokens: thread.Tokens{Input: 300_000}, Over: thread.Tokens{Input: 100_000}}})
		for k := range s.Count(fast) {
			given[k.Fam] = true
		}
	}
	// no_usage, which items give, has never been compared by covers: left
	// as it was by the change that made this list a column of the table.
	notCovered := map[Family]bool{FamCost: true, FamUnpriced: true, FamNoUsage: true, FamSpeedPremium: true}
	for f := range given {
		if !itemFamilies[f] && !notCovered[f] {
			t.Errorf("the items give family %s, not flagged items in the table", f)
		}
	}
	for f := range itemFamilies {
		if !given[f] {
			t.Errorf("family %s is flagged items, but no item gave it", f)
		}
	}
}
