package collector

import (
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/store"
)

// exposed gathers c on a pedantic registry: each series as
// "name{l1="v1",…}" → value (histograms by their sample count).
func exposed(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+`="`+lp.GetValue()+`"`)
			}
			sort.Strings(ls)
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return out
}

// TestSourceFamiliesWaitForFirstPass: a source's families are absent until
// its first pass is done, the families that add several sources up until
// all of them are, and whatever is shown is the complete value, never a
// part of it.
func TestSourceFamiliesWaitForFirstPass(t *testing.T) {
	files := fixtureStore(t, store.StoreOptions{})
	server := fixtureStore(t, store.StoreOptions{})
	stream := streamStore(t)
	complete := NewAmpCollector(files, stream)
	complete.SetAmpServerStore(server)
	want := exposed(t, complete)

	var filesReady, serverReady, streamReady atomic.Bool
	c := NewAmpCollector(files, stream)
	c.SetAmpServerStore(server)
	c.SetReady(store.SourceThreads, filesReady.Load)
	c.SetReady(store.SourceAmpServer, serverReady.Load)
	c.SetReady(store.SourceStream, streamReady.Load)

	// Series of no source, present only once every thread store is.
	shared := []string{NameThreads, NameLastActivity, NameOf(store.FamContextBucket)}
	// Series of the stream store without a source label.
	streamOnly := []string{NameOf(store.FamExecutions), NameOf(store.FamExecDurationBucket), NameOf(store.FamExecTurnsBucket)}
	for _, n := range append(append([]string{}, shared...), streamOnly...) {
		if !hasFamily(want, n) {
			t.Fatalf("the fixtures expose no %s: the test would prove nothing", n)
		}
	}
	for _, src := range []string{store.SourceThreads, store.SourceAmpServer, store.SourceStream} {
		if !hasSource(want, src) {
			t.Fatalf("the fixtures expose no source=%q series", src)
		}
	}
	steps := []struct {
		name                   string
		files, server, streams bool
	}{
		{"nothing ready", false, false, false},
		{"stream ready", false, false, true},
		{"files ready", true, false, false},
		{"server ready", false, true, false},
		{"all ready", true, true, true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			filesReady.Store(s.files)
			serverReady.Store(s.server)
			streamReady.Store(s.streams)
			got := exposed(t, c)
			for k, v := range got {
				if !(s.files && s.server) && (hasFamily(map[string]float64{k: v}, NameThreads) || hasFamily(map[string]float64{k: v}, NameLastActivity)) {
					continue // gauges of the thread stores shown: no counter to reset
				}
				if w, ok := want[k]; !ok || w != v {
					t.Errorf("%s = %v, complete value %v (present: %v): a partial value", k, v, w, ok)
				}
			}
			for src, ready := range map[string]bool{store.SourceThreads: s.files, store.SourceAmpServer: s.server, store.SourceStream: s.streams} {
				if hasSource(got, src) != ready {
					t.Errorf("source=%q series shown: %v, ready: %v", src, hasSource(got, src), ready)
				}
			}
			for _, n := range shared {
				// amp_threads and the last activity are gauges of what
				// the shown stores hold; the histogram adds the stores up.
				wantShown := s.files && s.server || (n != NameOf(store.FamContextBucket) && (s.files || s.server))
				if hasFamily(got, n) != wantShown {
					t.Errorf("%s shown: %v, want %v", n, hasFamily(got, n), wantShown)
				}
			}
			for _, n := range streamOnly {
				if hasFamily(got, n) != s.streams {
					t.Errorf("%s shown: %v, stream ready: %v", n, hasFamily(got, n), s.streams)
				}
			}
			if s.files && s.server && s.streams && len(got) != len(want) {
				t.Errorf("all ready: %d series, the ungated collector shows %d", len(got), len(want))
			}
		})
	}
}

func hasFamily(series map[string]float64, name string) bool {
	for k := range series {
		if strings.HasPrefix(k, name+"{") {
			return true
		}
	}
	return false
}

func hasSource(series map[string]float64, src string) bool {
	for k := range series {
		if strings.Contains(k, `source="`+src+`"`) {
			return true
		}
	}
	return false
}

// TestUngatedShowsWhatTheStoresHold: before any first pass, Ungated shows
// every series the stores hold (what a restart restored), the same as a
// collector that was never gated, while the gated one still shows none of
// them.
func TestUngatedShowsWhatTheStoresHold(t *testing.T) {
	files := fixtureStore(t, store.StoreOptions{})
	server := fixtureStore(t, store.StoreOptions{})
	stream := streamStore(t)
	complete := NewAmpCollector(files, stream)
	complete.SetAmpServerStore(server)
	want := exposed(t, complete)

	never := func() bool { return false }
	c := NewAmpCollector(files, stream)
	c.SetAmpServerStore(server)
	c.SetReady(store.SourceThreads, never)
	c.SetReady(store.SourceAmpServer, never)
	c.SetReady(store.SourceStream, never)
	got := exposed(t, c.Ungated())
	if len(got) == 0 || len(got) != len(want) {
		t.Fatalf("ungated shows %d series, the stores hold %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: ungated %v, want %v", k, got[k], v)
		}
	}
	if gated := exposed(t, c); len(gated) >= len(want) {
		t.Errorf("the gated collector shows %d series before any first pass", len(gated))
	}
}
