package app

import (
	"compress/gzip"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// otlpReceiver decodes every push and keeps them with their headers.
type otlpReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	pushes  []pmetric.Metrics
	headers []http.Header
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			t.Errorf("receiver: %v", err)
			return
		}
		raw, _ := io.ReadAll(zr)
		er := pmetricotlp.NewExportRequest()
		if err := er.UnmarshalProto(raw); err != nil {
			t.Errorf("receiver: %v", err)
		}
		r.mu.Lock()
		r.pushes = append(r.pushes, er.Metrics())
		r.headers = append(r.headers, req.Header.Clone())
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pushes)
}

func (r *otlpReceiver) last() (pmetric.Metrics, http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pushes[len(r.pushes)-1], r.headers[len(r.headers)-1]
}

// sumPoints are a pushed counter's points: value and start by attributes.
func sumPoints(md pmetric.Metrics, name string) map[string][2]float64 {
	out := map[string][2]float64{}
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Name() != name || ms.At(i).Type() != pmetric.MetricTypeSum {
			continue
		}
		dps := ms.At(i).Sum().DataPoints()
		for j := 0; j < dps.Len(); j++ {
			dp := dps.At(j)
			out[fmt.Sprint(dp.Attributes().AsRaw())] = [2]float64{dp.DoubleValue(), float64(dp.StartTimestamp())}
		}
	}
	return out
}

// allSumPoints are every pushed counter's points: value, start and time
// (ns) by name and attributes.
func allSumPoints(md pmetric.Metrics) map[string][3]float64 {
	out := map[string][3]float64{}
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Type() != pmetric.MetricTypeSum {
			continue
		}
		dps := ms.At(i).Sum().DataPoints()
		for j := 0; j < dps.Len(); j++ {
			dp := dps.At(j)
			k := ms.At(i).Name() + fmt.Sprint(dp.Attributes().AsRaw())
			out[k] = [3]float64{dp.DoubleValue(), float64(dp.StartTimestamp()), float64(dp.Timestamp())}
		}
	}
	return out
}

func otlpConfig(urls ...string) *config.Config {
	cfg := &config.Config{}
	for _, u := range urls {
		cfg.OTLP = append(cfg.OTLP, config.OTLPConfig{
			Endpoint: config.RemoteURL(u), Interval: model.Duration(time.Hour), Timeout: model.Duration(5 * time.Second),
			ResourceAttributes: map[string]string{"user": "alice"},
		})
	}
	return cfg
}

// A reload keeps unchanged senders, stops removed ones with a last push,
// starts new ones, and a bad entry changes nothing; shutdown waits for
// every sender's last push. The resource gets its defaults.
func TestOTLPPushersApplyAndShutdown(t *testing.T) {
	a, b := newOTLPReceiver(t), newOTLPReceiver(t)
	var logs syncWriter
	reg := prometheus.NewRegistry()
	op := newOTLPPushers(reg, func() bool { return true }, ampstore.NewSeriesStarts(), slog.New(slog.NewTextHandler(&logs, nil)))
	op.hostname = func() (string, error) { return "laptop-7", nil }
	apply := func(cfg *config.Config) error {
		p, err := op.prepare(cfg)
		if err != nil {
			return err
		}
		op.commit(p)
		return nil
	}
	if err := apply(otlpConfig(a.srv.URL)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitUntil(t, "first push to a", func() bool { return a.count() == 1 })
	md, _ := a.last()
	res := md.ResourceMetrics().At(0).Resource().Attributes().AsRaw()
	if len(res) != 3 || res["service.name"] != "amp-exporter" || res["service.instance.id"] != "laptop-7" || res["user"] != "alice" {
		t.Errorf("resource %v, want the defaults beside user", res)
	}

	if err := apply(otlpConfig(a.srv.URL, b.srv.URL)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitUntil(t, "first push to b", func() bool { return b.count() == 1 })
	if a.count() != 1 {
		t.Fatalf("the unchanged sender for a was restarted (%d pushes)", a.count())
	}
	bad := otlpConfig(b.srv.URL)
	bad.OTLP[0].HTTPClientConfig.TLSConfig.CAFile = "/no/such/ca.pem"
	if err := apply(bad); err == nil {
		t.Fatal("a bad entry was applied")
	}
	if err := apply(otlpConfig(b.srv.URL)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitUntil(t, "last push to a when removed", func() bool { return a.count() == 2 })
	op.stop()
	if a.count() != 2 || b.count() != 2 {
		t.Fatalf("pushes a=%d b=%d, want 2 each (first and last)", a.count(), b.count())
	}
	if n := strings.Count(logs.String(), "pushing metrics with OTLP"); n != 2 {
		t.Fatalf("%d senders started, want 2:\n%s", n, logs.String())
	}
}

// Through the whole exporter with --storage.path: the totals pushed
// before and after a restart are the same, with the same start times, so a
// receiver counts nothing twice; headers from the environment arrive and
// /config does not show them.
func TestOTLPStartTimesSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	threads := mkdir(t, dir, "threads")
	name, data := threadgen.New(threadgen.Options{Threads: 1, TotalBytes: 20000, Seed: 1}).Thread(0)
	if err := os.WriteFile(filepath.Join(threads, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	rcv := newOTLPReceiver(t)
	cfg := fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\n"+
		"otlp:\n  - endpoint: %s/v1/metrics\n    interval: 1h\n    resource_attributes: {user: alice}\n    headers_env: {X-Api-Key: OTLP_KEY}\n",
		threads, rcv.srv.URL)
	env := map[string]string{"OTLP_KEY": "envk3y"}
	withStorage := func(o *Options) { o.StoragePath = filepath.Join(dir, "state") }

	e := startTestApp(t, cfg, env, withStorage)
	for deadline := time.Now().Add(10 * time.Second); rcv.count() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if rcv.count() != 1 {
		t.Fatalf("%d pushes:\n%s", rcv.count(), e.logs.String())
	}
	md, h := rcv.last()
	before := sumPoints(md, "amp_tokens_total")
	if len(before) == 0 {
		t.Fatal("no token totals pushed")
	}
	if h.Get("X-Api-Key") != "envk3y" {
		t.Errorf("X-Api-Key %q, want the environment variable's value", h.Get("X-Api-Key"))
	}
	if strings.Contains(e.configText(), "envk3y") {
		t.Errorf("/config shows a header's value:\n%s", e.configText())
	}
	if err := e.stop(); err != nil {
		t.Fatal(err)
	}
	pushed := rcv.count() // the first and the last
	md, _ = rcv.last()
	lastBefore := allSumPoints(md)

	again := startTestApp(t, cfg, env, withStorage)
	testutil.WaitUntil(t, "the first push after the restart", func() bool { return rcv.count() == pushed+1 })
	md, _ = rcv.last()
	after := sumPoints(md, "amp_tokens_total")
	// Every counter of the exporter, not only the restored totals: one
	// that came back lower (it counts this process only) must carry a new
	// start time, or a receiver takes the drop for a loss of data and the
	// climb back for new counts.
	firstAfter := allSumPoints(md)
	for k, b := range lastBefore {
		a, ok := firstAfter[k]
		if !ok {
			continue
		}
		if a[0] < b[0] && a[1] == b[1] {
			t.Errorf("%s: went from %v to %v over the restart but kept its start time", k, b[0], a[0])
		}
		if a[1] != b[1] && a[1] <= b[2] {
			t.Errorf("%s: new start time %v is not after the last point before the restart (%v)", k, a[1], b[2])
		}
		// The exporter's own counters and the Go and process ones count
		// this process only, whatever their value: none keeps its start.
		own := strings.HasPrefix(k, "amp_exporter_") || strings.HasPrefix(k, "go_") || strings.HasPrefix(k, "process_")
		if own && a[1] <= b[2] {
			t.Errorf("%s: start time %v kept over the restart (last point before at %v); it counts this process only", k, a[1], b[2])
		}
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: pushed %v (total, start ns) after the restart, %v before", k, after[k], v)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d series after the restart, %d before", len(after), len(before))
	}
	_ = again
}
