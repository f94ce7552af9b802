package statusline

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/spend"
	"github.com/amp-exporter/amp-exporter/ledger"
)

// The line of an exporter whose sums reached the top is the largest
// figure, not a negative one: two threads at the top of what the store
// counts, summed as /api/spend sums them.
func TestFormatOfSaturatedSpend(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	start := ledger.StartOf(now.Add(-time.Hour).UnixMilli())
	u := ledger.Usage{Input: 4e18, Cost: math.MaxInt64/2 + 1}
	s := spend.Summarize(spend.Input{Location: time.UTC, Now: now, Entries: []ledger.Entry{
		{Start: start, Session: "T-1", Model: "m", Usage: u}, {Start: start, Session: "T-2", Model: "m", Usage: u},
	}})
	line := Format(s.JSON(), now, false)
	if strings.Contains(line, "-") || !strings.HasPrefix(line, "$922,337,203.69 today") {
		t.Errorf("line %q", line)
	}
}
