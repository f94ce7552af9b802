package collector

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// An instrument set by code has the name, HELP and labels of its row (the
// descriptor the collector would build from the row), and a constructor
// of the wrong type, or without the row's labels, refuses the row.
func TestInstrumentsAreBuiltFromTheirRow(t *testing.T) {
	for name, c := range map[string]prometheus.Collector{
		NameParseErrors:       NewCounterVec(NameParseErrors),
		NameWatcherPolling:    NewGaugeVec(NameWatcherPolling),
		NameParseDuration:     newHistogramVec(NameParseDuration),
		NameFilesParsed:       newCounter(NameFilesParsed),
		NameServerUp:          newGauge(NameServerUp),
		NameStateSaveDuration: newHistogram(NameStateSaveDuration),
	} {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		if got, want := (<-ch).String(), descs[name].String(); got != want {
			t.Errorf("%s: built as %s, its row says %s", name, got, want)
		}
	}
	for _, bad := range []struct {
		what  string
		build func()
	}{
		{"a counter row as a gauge", func() { NewGaugeVec(NameParseErrors) }},
		{"a labeled row without labels", func() { newCounter(NameParseErrors) }},
		{"a name without a row", func() { newGauge("amp_no_such_metric") }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: built", bad.what)
				}
			}()
			bad.build()
		}()
	}
}
