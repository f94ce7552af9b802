package backfill

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// sixThreads replays the case of issue 27: six threads of March 2026, the
// third of which has one answer stamped 1970-01-01T00:00:01Z (bad is its
// timestamp, in epoch ms), and, when future is set, the fifth one stamped
// a year after until.
func sixThreads(t *testing.T, bad int64, future bool) *Backfill {
	t.Helper()
	until := base + 2*24*3600_000
	b, err := New(Options{Until: time.UnixMilli(until), Prices: prices()})
	if err != nil {
		t.Fatal(err)
	}
	p := thread.NewParser()
	for i := range 6 {
		created := base + int64(i)*3600_000
		msgs := []msg{
			{sent: created + 60_000, at: created + 120_000, input: 100, output: 10},
			{sent: created + 600_000, at: created + 660_000, input: 200, output: 20, tool: "Bash"},
		}
		if i == 2 {
			msgs[1].at = bad
		}
		if i == 4 && future {
			msgs[1].at = until + 365*24*3600_000
		}
		if err := b.AddThread(store.SourceThreads, fmt.Sprintf("/d/T-%d.json", i), summarize(t, p, doc(fmt.Sprintf("T-%d", i), created, msgs))); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestBoundedTimes: one usage stamped 1970 among six 2026 threads leaves
// the range and the samples as they are without it (it made them 27
// times more, reaching back 56 years); the item is counted all the same,
// at its thread's created, and reported. An item stamped in the future is
// left to the live counters and reported.
func TestBoundedTimes(t *testing.T) {
	const epochPlusOne = 1000 // 1970-01-01T00:00:01Z
	good := sixThreads(t, base+2*3600_000+660_000, false)
	bad := sixThreads(t, epochPlusOne, false)

	goodTimes, badTimes := good.Range(time.Time{}), bad.Range(time.Time{})
	if badTimes[0] < AmpBegan.UnixMilli() {
		t.Fatalf("the range starts at %s", time.UnixMilli(badTimes[0]).UTC())
	}
	goodSeries, badSeries := good.Series(goodTimes), bad.Series(badTimes)
	if g, b := Samples(goodSeries), Samples(badSeries); b != g {
		t.Errorf("%d samples with the 1970 stamp, %d without", b, g)
	}
	// Nothing lost: every series ends at the same value.
	if g, b := last(goodSeries), last(badSeries); !maps.Equal(g, b) {
		t.Errorf("last values differ:\nwith the stamp %v\nwithout       %v", b, g)
	}
	if st := bad.Stats(); st.Bounded[BoundBeforeCreated] != 1 || len(st.Bounded) != 1 {
		t.Errorf("bounded %v, want one before_created", st.Bounded)
	}
	if st := good.Stats(); len(st.Bounded) != 0 {
		t.Errorf("bounded %v without a bad stamp", st.Bounded)
	}

	// In the future: not history; reported.
	fut := sixThreads(t, base+2*3600_000+660_000, true)
	st := fut.Stats()
	if st.Bounded[BoundFuture] != 1 || st.Later != 1 {
		t.Errorf("future: bounded %v, later %d", st.Bounded, st.Later)
	}
	if n := len(fut.Range(time.Time{})); n != len(goodTimes) {
		t.Errorf("future: %d sample times, want %d", n, len(goodTimes))
	}
}

// TestBoundedTimesWithoutCreated: a thread whose created is itself before
// Amp existed bounds a bad item to its earliest plausible item time; one
// with no plausible time at all counts in the first sample.
func TestBoundedTimesWithoutCreated(t *testing.T) {
	until := base + 24*3600_000
	p := thread.NewParser()
	for _, tc := range []struct {
		name   string
		msgs   []msg
		wantAt int64 // the first sample time of the thread's tokens
		// the items before Floor: the prompts (no time of their own: the
		// nearest earlier, at worst created) and the answer stamped 5000
		bounded int64
	}{
		{"one plausible item", []msg{{at: 5000, input: 1, output: 1}, {at: base + 3*min5, input: 1, output: 1}}, base + 3*min5, 3},
		{"none", []msg{{at: 5000, input: 1, output: 1}}, base - min5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(Options{Until: time.UnixMilli(until)})
			if err != nil {
				t.Fatal(err)
			}
			// Another thread sets where the history begins.
			if err := b.AddThread(store.SourceThreads, "/d/T-0.json", summarize(t, p, doc("T-0", base-min5, []msg{{at: base - min5, input: 1}}))); err != nil {
				t.Fatal(err)
			}
			if err := b.AddThread(store.SourceThreads, "/d/T-1.json", summarize(t, p, doc("T-1", 2000, tc.msgs))); err != nil {
				t.Fatal(err)
			}
			times := b.Range(time.Time{})
			if times[0] != base-min5 {
				t.Fatalf("the range starts at %s", time.UnixMilli(times[0]).UTC())
			}
			for _, s := range b.Series(times) {
				if s.ID.Key.Fam == store.FamTokens && s.ID.Key.L2 == "output" {
					for pt := range s.Points() {
						if pt.V > 0 {
							if pt.T != tc.wantAt {
								t.Errorf("output tokens first counted at %s, want %s", time.UnixMilli(pt.T).UTC(), time.UnixMilli(tc.wantAt).UTC())
							}
							break
						}
					}
				}
			}
			if st := b.Stats(); st.Bounded[BoundBeforeAmp] != tc.bounded || len(st.Bounded) != 1 {
				t.Errorf("bounded %v, want %d before_amp", st.Bounded, tc.bounded)
			}
		})
	}
}
