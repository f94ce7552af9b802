package runway

import (
	"math"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
)

// t0 is a bucket boundary; the ledger's buckets are 15 minutes.
var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

const bucket = 15 * time.Minute

// steady is usd per bucket for the n buckets before end.
func steady(end time.Time, n int, usd float64) []Spend {
	var out []Spend
	for i := n; i > 0; i-- {
		s := end.Add(-time.Duration(i) * bucket)
		out = append(out, Spend{Start: s, End: s.Add(bucket), USD: usd})
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestRate(t *testing.T) {
	tests := []struct {
		name   string
		spends []Spend
		now    time.Time
		window time.Duration
		want   float64
	}{
		{"nothing", nil, t0, Short, 0},
		{"one whole bucket in the window", []Spend{{t0.Add(-bucket), t0, 1}}, t0, Short, 4},
		{"the same over 6h", []Spend{{t0.Add(-bucket), t0, 1}}, t0, Long, 1.0 / 6},
		// 5 minutes into a bucket: it is open, its dollars were spent in
		// those 5 minutes, all inside the window; two thirds of the
		// bucket before lie inside it.
		{"an open bucket and a share of the one before", []Spend{{t0.Add(-bucket), t0, 3}, {t0, t0.Add(bucket), 1}}, t0.Add(5 * time.Minute), Short, (1 + 2) * 4},
		{"older than the window", []Spend{{t0.Add(-2 * bucket), t0.Add(-bucket), 5}}, t0, Short, 0},
		{"in the future (a skewed clock)", []Spend{{t0.Add(bucket), t0.Add(2 * bucket), 5}}, t0, Short, 0},
		{"6h of 0.25 per bucket", steady(t0, 24, 0.25), t0, Long, 1},
		{"6h of 0.25 per bucket and older", steady(t0, 48, 0.25), t0, Long, 1},
		{"negative amounts are left out", []Spend{{t0.Add(-bucket), t0, -1}}, t0, Short, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Rate(tt.spends, tt.now, tt.window); !near(got, tt.want) {
				t.Errorf("Rate = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPace(t *testing.T) {
	spike := append(steady(t0, 24, 0.25), Spend{t0, t0.Add(bucket), 4}) // 1 USD/h for 6h, then 4 USD in one minute
	tests := []struct {
		name   string
		spends []Spend
		now    time.Time
		want   float64
	}{
		{"nothing spent", nil, t0, 0},
		{"steady: both rates agree", steady(t0, 24, 0.25), t0, 1},
		// One expensive minute: the 15m rate is 17 USD/h, the 6h one
		// 1 + 4/6; the pace is the lower.
		{"one expensive minute", spike, t0.Add(time.Minute), (0.25*23 + 0.25*14.0/15 + 4) / 6},
		// 15 minutes later it is out of the short window: 0 USD/h since.
		{"after the spike, nothing spent", spike, t0.Add(31 * time.Minute), 0},
		{"stopped an hour ago", steady(t0.Add(-time.Hour), 20, 0.25), t0, 0},
		// A new, higher pace shows as the 6h average catches up.
		{"busy after an idle day", steady(t0, 2, 2), t0, 4.0 / 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Pace(tt.spends, tt.now); !near(got, tt.want) {
				t.Errorf("Pace = %v, want %v", got, tt.want)
			}
		})
	}
}

func f(v float64) *float64 { return &v }

func TestOf(t *testing.T) {
	now := t0
	tests := []struct {
		name      string
		remaining *float64
		resets    time.Time
		perHour   float64
		ok        bool
		out       time.Time
		before    bool
		phrase    string
	}{
		{"out before the reset", f(7.5), now.Add(10 * time.Hour), 2.5, true, now.Add(3 * time.Hour), true, "out in ~3h at this pace"},
		{"the reset comes first", f(7.5), now.Add(2 * time.Hour), 2.5, true, now.Add(3 * time.Hour), false, "lasts until the reset"},
		{"reset unknown", f(7.5), time.Time{}, 2.5, true, now.Add(3 * time.Hour), true, "out in ~3h at this pace"},
		{"spending nothing", f(7.5), now.Add(time.Hour), 0, false, time.Time{}, false, ""},
		{"remaining unknown", nil, now.Add(time.Hour), 2.5, false, time.Time{}, false, ""},
		{"nothing left", f(0), now.Add(time.Hour), 2.5, false, time.Time{}, false, ""},
		{"minutes", f(1), now.Add(time.Hour), 2.5, true, now.Add(24 * time.Minute), true, "out in ~24m at this pace"},
		{"under a minute", f(0.01), now.Add(time.Hour), 2.5, true, now.Add(14400 * time.Millisecond), true, "out in ~1m at this pace"},
		{"days", f(100), now.Add(30 * 24 * time.Hour), 1, true, now.Add(100 * time.Hour), true, "out in ~4d at this pace"},
		{"a not-a-number pace", f(1), now.Add(time.Hour), math.NaN(), false, time.Time{}, false, ""},
		{"an infinite remainder", f(math.Inf(1)), now.Add(time.Hour), 1, false, time.Time{}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := Of(tt.remaining, tt.resets, tt.perHour, now)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tt.ok, r)
			}
			if !ok {
				return
			}
			if !r.Out.Equal(tt.out) || r.BeforeReset() != tt.before {
				t.Errorf("out %v before reset %v, want %v %v", r.Out, r.BeforeReset(), tt.out, tt.before)
			}
			if got := r.Phrase(now); got != tt.phrase {
				t.Errorf("Phrase = %q, want %q", got, tt.phrase)
			}
		})
	}
}

// The phrase is read at the time it is shown: a runway worked out earlier
// (a summary kept in a cache) counts down as the clock moves.
func TestPhraseCountsDown(t *testing.T) {
	c := clock.NewFake(t0)
	r, ok := Of(f(7.5), t0.Add(10*time.Hour), 2.5, c.Now())
	if !ok {
		t.Fatal("no runway")
	}
	for _, step := range []struct {
		by   time.Duration
		want string
	}{
		{0, "out in ~3h at this pace"},
		{80 * time.Minute, "out in ~2h at this pace"},
		{70 * time.Minute, "out in ~30m at this pace"},
		{40 * time.Minute, "out now at this pace"},
	} {
		c.Advance(step.by)
		if got := r.Phrase(c.Now()); got != step.want {
			t.Errorf("at +%v: %q, want %q", c.Now().Sub(t0), got, step.want)
		}
	}
}

func TestAbout(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "~1m"}, {30 * time.Second, "~1m"}, {59 * time.Minute, "~59m"}, {89 * time.Minute, "~1h"},
		{91 * time.Minute, "~2h"}, {47 * time.Hour, "~47h"}, {48 * time.Hour, "~2d"}, {84 * time.Hour, "~4d"},
	} {
		if got := About(c.d); got != c.want {
			t.Errorf("About(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
