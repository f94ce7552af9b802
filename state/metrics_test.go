package state

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

func metric(t *testing.T, reg *prometheus.Registry, name string, label ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(label) == 2 && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
				return l.GetName() == label[0] && l.GetValue() == label[1]
			}) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("no %s%v", name, label)
	return 0
}

// The log reports itself: bytes written and save durations per save, and
// what a load found by kind (a torn tail is not an
// error; damage is).
func TestKeeperReportsTheLog(t *testing.T) {
	dir := t.TempDir()
	gen := threadgen.New(threadgen.Options{Threads: 40, TotalBytes: 40 * 20_000, Seed: 8})
	a := newTestState(dir)
	mustRestore(t, a)
	a.applyThreads(t, gen, 0, 30)
	if err := a.keeper.Save(); err != nil {
		t.Fatal(err)
	}
	a.applyThreads(t, gen, 30, 40)
	if err := a.keeper.Save(); err != nil {
		t.Fatal(err)
	}
	if got := metric(t, a.reg, "amp_exporter_state_bytes_written_total"); got != float64(a.keeper.written) || got == 0 {
		t.Errorf("bytes written %g, the keeper wrote %d", got, a.keeper.written)
	}
	if got := metric(t, a.reg, "amp_exporter_state_save_duration_seconds"); got != 3 { // the first (empty stores) and two
		t.Errorf("%g saves timed, want 3", got)
	}
	if err := a.keeper.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.keeper.Save(); err != ErrClosed {
		t.Errorf("save after close: %v", err)
	}
	log, err := os.ReadFile(filepath.Join(dir, LogName))
	if err != nil {
		t.Fatal(err)
	}
	restart := func(b []byte) *testState {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, LogName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s := newTestState(d)
		mustRestore(t, s)
		return s
	}
	torn := restart(log[:len(log)-3])
	if got := metric(t, torn.reg, "amp_exporter_state_load_errors_total", "kind", DamageTorn); got != 1 {
		t.Errorf("torn tails %g, want 1", got)
	}
	if got := torn.loadErrors(t); got != 0 {
		t.Errorf("a torn tail counted as a load error (%g)", got)
	}
	damaged := slices.Clone(log)
	damaged[100] ^= 1 // a record of the first commit
	d := restart(damaged)
	if d.loadErrors(t) != 1 || metric(t, d.reg, "amp_exporter_state_load_errors_total", "kind", DamageBatch) != 1 ||
		metric(t, d.reg, "amp_exporter_state_load_errors_total", "kind", DamageRecord) != 1 {
		t.Errorf("damage: load errors %g, batches %g, records %g; want 1 each", d.loadErrors(t),
			metric(t, d.reg, "amp_exporter_state_load_errors_total", "kind", DamageBatch),
			metric(t, d.reg, "amp_exporter_state_load_errors_total", "kind", DamageRecord))
	}
	if problems, err := testutil.GatherAndLint(d.reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
