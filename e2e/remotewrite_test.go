//go:build e2e

package e2e

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// startReceiver runs Debian's Prometheus as a remote-write receiver
// (--web.enable-remote-write-receiver, no scrape targets) on port, with
// its TSDB in dataDir, so a test can stop it and start it again on the same
// data. Rule files are evaluated every second.
func startReceiver(t *testing.T, dataDir string, port int, ruleFiles ...string) *prometheus {
	t.Helper()
	return startReceiverWith(t, requireTool(t, "prometheus"), nil, dataDir, port, ruleFiles...)
}

// startReceiverWith is startReceiver with another Prometheus binary and
// extra flags.
func startReceiverWith(t *testing.T, bin string, flags []string, dataDir string, port int, ruleFiles ...string) *prometheus {
	t.Helper()
	cfg := "global:\n  evaluation_interval: 1s\n"
	if len(ruleFiles) > 0 {
		cfg += "rule_files:\n"
		for _, f := range ruleFiles {
			cfg += fmt.Sprintf("  - %q\n", f)
		}
	}
	cfgFile := filepath.Join(t.TempDir(), "receiver.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &prometheus{
		process: startProcess(t, "receiver", os.Environ(), bin, append([]string{
			"--config.file=" + cfgFile,
			"--storage.tsdb.path=" + dataDir,
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
			"--web.enable-remote-write-receiver",
		}, flags...)...),
		base: fmt.Sprintf("http://127.0.0.1:%d", port),
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if p.exited() {
			t.Fatalf("receiver exited at start: %v\n%s", p.err, p.output.String())
		}
		if resp, err := httpClient.Get(p.base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver not ready after 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fleetMember is one laptop of the team: its own thread directory, the
// external labels it pushes with, and extra configuration.
type fleetMember struct {
	user, host string
	threads    string
	// extra is YAML appended to the member's configuration. The Amp server
	// stand-in (branch i11-server) plugs in here: an amp_server block
	// pointing both of one user's laptops at the same stand-in account.
	// The expectations below already treat source="server" series as the
	// user's (max across hosts) and the rest as the machine's (sum).
	extra string
	// message is the remote_write protobuf_message ("" for the default).
	message string
}

// startPushingExporter starts an exporter on m's thread directory that
// pushes to receiverURL every second with m's user and host labels.
func startPushingExporter(t *testing.T, m fleetMember, receiverURL string) *exporter {
	t.Helper()
	msg := ""
	if m.message != "" {
		msg = "    protobuf_message: " + m.message + "\n"
	}
	cfg := fmt.Sprintf(`threads:
  dirs: [%q]
remote_write:
  - url: %s/api/v1/write
    interval: 1s
    timeout: 1s
    external_labels: {user: %q, host: %q}
%s%s`, m.threads, receiverURL, m.user, m.host, msg, m.extra)
	path := filepath.Join(t.TempDir(), "amp-exporter.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return startExporter(t, exporterOpts{threadsDir: m.threads, args: []string{"--config.file=" + path}})
}

// byLabel sums a family's series by the value of one label, keeping only
// series whose source label passes keep.
func byLabel(mfs map[string]*dto.MetricFamily, name, label string, keep func(source string) bool) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mfs[name].GetMetric() {
		ls := map[string]string{}
		for _, lp := range m.GetLabel() {
			ls[lp.GetName()] = lp.GetValue()
		}
		if keep != nil && !keep(ls["source"]) {
			continue
		}
		out[ls[label]] += m.GetCounter().GetValue()
	}
	return out
}

func closeVectors(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || math.Abs(v-w) > 1e-9*math.Max(1, math.Abs(w)) {
			return false
		}
	}
	return true
}

// waitQuery polls the receiver until q's result, keyed by label key,
// equals want (within float rounding: the receiver sums in its own order).
func waitQuery(t *testing.T, p *prometheus, q, key string, want map[string]float64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	var got map[string]float64
	var err error
	for time.Now().Before(deadline) {
		got, err = p.query(q, key)
		if err == nil && closeVectors(got, want) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: got %s (err %v), want %s", q, formatVector(got), err, formatVector(want))
}

// The binary pushes to a real Prometheus; the receiver goes down while the
// corpus changes and comes back on the same data directory; its totals
// catch up with the exporter's, nothing lost.
func TestRemoteWriteCatchesUpAfterReceiverOutage(t *testing.T) {
	threads := t.TempDir()
	copyFixtures(t, threads)
	data := t.TempDir()
	port := freePort(t)
	rcv := startReceiver(t, data, port)
	exp := startPushingExporter(t, fleetMember{user: "alice", host: "laptop-1", threads: threads}, rcv.base)

	tokens := func() map[string]float64 { return byLabel(exp.metrics(t), "amp_tokens_total", "token_type", nil) }
	before := tokens()
	if before["output"] == 0 {
		t.Fatalf("the corpus counted no output tokens: %v", before)
	}
	const q = `sum by (token_type) (amp_tokens_total{user="alice",host="laptop-1"})`
	waitQuery(t, rcv, q, "token_type", before, 30*time.Second)
	// Histograms arrive as classic buckets, with the +Inf bucket equal to
	// the count.
	waitQuery(t, rcv, `sum(amp_exchange_duration_seconds_bucket{le="+Inf"}) - sum(amp_exchange_duration_seconds_count)`, "", map[string]float64{"": 0}, 10*time.Second)

	if err := rcv.stop(); err != nil {
		t.Fatalf("receiver stop: %v", err)
	}
	writeThreadLikeAmp(t, threads, "T-0e3c5c1e-7a0b-4a53-9d8c-1b2c3d4e5f60.json",
		threadJSON("T-0e3c5c1e-7a0b-4a53-9d8c-1b2c3d4e5f60", "claude-sonnet-4-5-20250929", 1, 777))
	exp.waitFor(t, 20*time.Second, "the new thread counted and pushes dropped while the receiver is down",
		func(mfs map[string]*dto.MetricFamily) (bool, string) {
			out := byLabel(mfs, "amp_tokens_total", "token_type", nil)["output"]
			dropped, _ := value(mfs, "amp_exporter_remote_write_samples_total", map[string]string{"result": "dropped"})
			return out == before["output"]+777 && dropped > 0, fmt.Sprintf("output %v, dropped %v", out, dropped)
		})

	rcv = startReceiver(t, data, port)
	after := tokens()
	waitQuery(t, rcv, q, "token_type", after, 30*time.Second)
	// The history from before the outage is still there: the receiver's
	// series reach back before the restart.
	waitQuery(t, rcv, `count(min_over_time(amp_tokens_total{user="alice",token_type="output"}[10m]) < max_over_time(amp_tokens_total{user="alice",token_type="output"}[10m])) > 0`,
		"", map[string]float64{"": 1}, 10*time.Second)
	mfs := exp.metrics(t)
	if v, _ := value(mfs, "amp_exporter_remote_write_samples_total", map[string]string{"result": "failed"}); v != 0 {
		t.Errorf("%v samples failed (refused) by a healthy receiver", v)
	}
	if strings.Contains(exp.output.String(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", exp.output.String())
	}
}

// fleetServerStandIn, when set (by the Amp server stand-in once it is
// merged), returns the extra configuration that points a member at the
// stand-in account of user. Nil: the team counts local threads only.
var fleetServerStandIn func(t *testing.T, user string) string

// Three laptops, two users, one receiver with the shipped rules: per user,
// the receiver's team numbers equal what the user's laptops counted —
// local sources summed over the laptops, server threads once.
func TestRemoteWriteTeamCountsEachUserOnce(t *testing.T) {
	members := []fleetMember{
		{user: "alice", host: "laptop-1"},
		{user: "alice", host: "laptop-2"},
		{user: "bob", host: "laptop-3"},
	}
	corpora := [][]string{
		{"usage-era.json", "ledger-era.json", "garbage.json"},
		{"both-eras.json", "fork-child.json"},
		{"openai-streaming.json", "cancelled-and-errors.json", "legacy-no-timestamps.json"},
	}
	rules := filepath.Join(repoRoot, "deploy", "rules", "amp-exporter.rules.yml")
	data, port := t.TempDir(), freePort(t)
	rcv := startReceiver(t, data, port, rules)
	exps := make([]*exporter, len(members))
	for i := range members {
		members[i].threads = t.TempDir()
		copyFixtures(t, members[i].threads, corpora[i]...)
		if fleetServerStandIn != nil {
			members[i].extra = fleetServerStandIn(t, members[i].user)
		}
		exps[i] = startPushingExporter(t, members[i], rcv.base)
	}

	// What each user's laptops counted, per token_type: local sources
	// summed over the laptops, source="server" the largest laptop's view.
	type key struct{ user, tokenType string } // tokenType: or model, for spend
	checkTeam := func() {
		t.Helper()
		local, server := map[key]float64{}, map[key]float64{}
		for i, e := range exps {
			mfs := e.metrics(t)
			for tt, v := range byLabel(mfs, "amp_tokens_total", "token_type", func(s string) bool { return s != "server" }) {
				local[key{members[i].user, tt}] += v
			}
			for tt, v := range byLabel(mfs, "amp_tokens_total", "token_type", func(s string) bool { return s == "server" }) {
				k := key{members[i].user, tt}
				server[k] = math.Max(server[k], v)
			}
		}
		for _, user := range []string{"alice", "bob"} {
			want, plain := map[string]float64{}, map[string]float64{}
			for k, v := range local {
				if k.user == user {
					want[k.tokenType] += v
					plain[k.tokenType] += v
				}
			}
			for k, v := range server {
				if k.user == user {
					want[k.tokenType] += v
				}
			}
			if len(want) == 0 {
				t.Fatalf("user %s counted nothing", user)
			}
			// The raw pushed series, summed: what each laptop counted.
			waitQuery(t, rcv, fmt.Sprintf(`sum by (token_type) (amp_tokens_total{user=%q,source!="server"})`, user), "token_type", plain, 30*time.Second)
			// The shipped fleet rule: each thread once.
			waitQuery(t, rcv, fmt.Sprintf(`sum by (token_type) (user:amp_tokens_total:fleet{user=%q})`, user), "token_type", want, 30*time.Second)
		}
		// Spend the same way, all users.
		var wantCost float64
		costServer := map[key]float64{} // per user and model
		for i, e := range exps {
			mfs := e.metrics(t)
			for _, v := range byLabel(mfs, "amp_cost_usd_total", "model", func(s string) bool { return s != "server" }) {
				wantCost += v
			}
			for model, v := range byLabel(mfs, "amp_cost_usd_total", "model", func(s string) bool { return s == "server" }) {
				k := key{members[i].user, model}
				costServer[k] = math.Max(costServer[k], v)
			}
		}
		if wantCost == 0 {
			t.Fatal("the corpora cost nothing")
		}
		for _, v := range costServer {
			wantCost += v
		}
		waitQuery(t, rcv, `sum(user:amp_cost_usd_total:fleet)`, "", map[string]float64{"": wantCost}, 30*time.Second)
	}
	checkTeam()
	// The dashboards on pushed data, with the user variable set: every
	// panel query runs, per-user panels show that user's laptops only.
	// (Rates need two pushes in their window: poll a while.)
	for _, q := range readPanelQueries(t) {
		expr := strings.NewReplacer(`user=~"$user"`, `user=~"alice"`).Replace(q.expr)
		expr = instantiate(expr)
		deadline := time.Now().Add(15 * time.Second)
		for {
			typ, n, err := rcv.queryRaw(expr)
			var problem string
			switch {
			case err != nil:
				problem = err.Error()
			case q.title == "Tokens by type" && n == 0:
				problem = "no data for user alice"
			case q.title == "Build info" && (typ != "vector" || n != 2):
				problem = fmt.Sprintf("%d series for user alice, want her 2 laptops", n)
			}
			if problem == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s / %q: %s: %s", q.uid, q.title, problem, expr)
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	// Every laptop reports its last successful push.
	waitQuery(t, rcv, `count by (user) (max by (user, host) (amp_exporter_remote_write_last_success_timestamp_seconds))`, "user",
		map[string]float64{"alice": 2, "bob": 1}, 30*time.Second)

	// Through a receiver outage: the receiver stops, alice's second laptop
	// and bob's laptop count new threads and drop their pushes, the
	// receiver comes back on the same data, and the team numbers catch up.
	if err := rcv.stop(); err != nil {
		t.Fatalf("receiver stop: %v", err)
	}
	for i, out := range map[int]int{1: 1234, 2: 4321} {
		id := fmt.Sprintf("T-7d1f0c2a-0000-4000-8000-00000000000%d", i)
		before := byLabel(exps[i].metrics(t), "amp_tokens_total", "token_type", nil)["output"]
		writeThreadLikeAmp(t, members[i].threads, id+".json", threadJSON(id, "claude-sonnet-4-5-20250929", 1, out))
		exps[i].waitFor(t, 20*time.Second, members[i].host+" counts the new thread and drops pushes",
			func(mfs map[string]*dto.MetricFamily) (bool, string) {
				got := byLabel(mfs, "amp_tokens_total", "token_type", nil)["output"]
				dropped, _ := value(mfs, "amp_exporter_remote_write_samples_total", map[string]string{"result": "dropped"})
				return got == before+float64(out) && dropped > 0, fmt.Sprintf("output %v (before %v), dropped %v", got, before, dropped)
			})
	}
	rcv = startReceiver(t, data, port, rules)
	checkTeam()
}

// Remote-write 2.0 configured against Debian's Prometheus 2.42, which knows
// only 1.0 (it decodes a 2.0 body as an empty 1.0 request and answers 204
// without the written-samples header): the exporter notices, logs it once,
// and sends 1.0; nothing is lost.
func TestRemoteWrite2FallsBackOnPrometheus2(t *testing.T) {
	threads := t.TempDir()
	copyFixtures(t, threads, "usage-era.json", "ledger-era.json")
	rcv := startReceiver(t, t.TempDir(), freePort(t))
	exp := startPushingExporter(t, fleetMember{user: "alice", host: "laptop-1", threads: threads,
		message: "io.prometheus.write.v2.Request"}, rcv.base)
	want := byLabel(exp.metrics(t), "amp_tokens_total", "token_type", nil)
	waitQuery(t, rcv, `sum by (token_type) (amp_tokens_total{user="alice"})`, "token_type", want, 30*time.Second)
	if n := strings.Count(exp.output.String(), "does not accept remote-write 2.0"); n != 1 {
		t.Errorf("fallback logged %d times, want once:\n%s", n, exp.output.String())
	}
}
