package thread

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// TestSummarizeItemsIsSummarizeWithoutTotals: over a generated corpus
// (forks, ledgers, tools, exchanges), SummarizeItems gives Summarize's
// summary less its totals: the same items, thread fields and activity.
func TestSummarizeItemsIsSummarizeWithoutTotals(t *testing.T) {
	g := threadgen.New(threadgen.Options{Threads: 24, TotalBytes: 2 << 20, Seed: 9, Start: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)})
	withTotals := 0
	for i := 0; i < g.Len(); i++ {
		name, data := g.Thread(i)
		th, err := NewParser().ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		// Items live in the parser's storage, which the second summary
		// reuses: the first one's are copied out.
		want := Summarize(th)
		want.Items = slices.Clone(want.Items)
		got := SummarizeItems(th)
		if len(want.Tokens) > 0 {
			withTotals++
		}
		if got.Tokens != nil || got.Credits != nil || got.Finished != nil || got.ToolCalls != nil ||
			got.ContextUtil != nil || got.ExchangeSeconds != nil || got.UserMessages != 0 || got.AssistantMessages != 0 {
			t.Errorf("%s: SummarizeItems added totals up", name)
		}
		// Summarize's totals, taken away, leave SummarizeItems'.
		want.Tokens, want.TokensOverThreshold, want.Credits, want.Finished, want.ToolCalls = nil, nil, nil, nil, nil
		want.ContextUtil, want.ExchangeSeconds = nil, nil
		want.UserMessages, want.Prompts, want.AssistantMessages = 0, 0, 0
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: SummarizeItems differs from Summarize beyond the totals:\n got %+v\nwant %+v", name, got, want)
		}
	}
	if withTotals < g.Len()/2 {
		t.Fatalf("%d of %d threads have token totals: the corpus does not exercise them", withTotals, g.Len())
	}
}
