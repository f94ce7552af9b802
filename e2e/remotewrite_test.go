//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/parser/thread"
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
	// extra is YAML appended to the member's configuration (amp_server).
	extra string
	// env is extra environment: AMP_API_KEY and AMP_URL for a laptop that
	// follows an Amp server account.
	env []string
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
	return startExporter(t, exporterOpts{threadsDir: m.threads, args: []string{"--config.file=" + path}, env: m.env})
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

// accountTokens sums the tokens of the stand-in account's threads per
// token_type, read from its documents with the thread parser as files would
// be: the account's usage, computed without any exporter. Zero sums are
// left out.
func accountTokens(t *testing.T, srv *ampservertest.Server) map[string]float64 {
	t.Helper()
	p := thread.NewParser()
	out := map[string]float64{}
	for _, id := range srv.IDs() {
		th, err := p.ParseBytes(srv.Document(id))
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range thread.Summarize(th).Tokens {
			out["input"] += float64(tok.Input)
			out["output"] += float64(tok.Output)
			out["cache_read"] += float64(tok.CacheRead)
			out["cache_creation"] += float64(tok.CacheCreation)
		}
	}
	return nonzero(out)
}

// nonzero is m without its zero values.
func nonzero(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// plus adds vectors element by element.
func plus(ms ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		for k, v := range m {
			out[k] += v
		}
	}
	return out
}

// scaled multiplies every element of m by f.
func scaled(m map[string]float64, f float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = v * f
	}
	return out
}

// waitCond polls cond until it holds, or fails the test after d with the
// last description.
func waitCond(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for {
		ok, desc := cond()
		if ok {
			return
		}
		last = desc
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// queryRangeLast runs q as a range query from start to now, as Grafana
// runs a stat panel, and returns each series' last point keyed by label
// key.
func queryRangeLast(p *prometheus, q, key string, start time.Time) (map[string]float64, error) {
	v := url.Values{
		"query": {q},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatFloat(float64(time.Now().UnixMilli())/1000, 'f', 3, 64)},
		"step":  {"2"},
	}
	resp, err := httpClient.Get(p.base + "/api/v1/query_range?" + v.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("decode answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if r.Status != "success" || r.Data.ResultType != "matrix" {
		return nil, fmt.Errorf("range query %s: %s %s %s", q, r.Status, r.Data.ResultType, r.Error)
	}
	out := map[string]float64{}
	for _, s := range r.Data.Result {
		if len(s.Values) == 0 {
			continue
		}
		str, _ := s.Values[len(s.Values)-1][1].(string)
		f, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("range query %s: bad sample %v", q, s.Values[len(s.Values)-1])
		}
		out[s.Metric[key]] = f
	}
	return out, nil
}

// shippedPanel returns the query of a shipped dashboard panel with user
// alice selected and the other variables at "All".
func shippedPanel(t *testing.T, uid, title string) string {
	t.Helper()
	for _, q := range readPanelQueries(t) {
		if q.uid == uid && q.title == title {
			return instantiate(strings.ReplaceAll(q.expr, `user=~"$user"`, `user=~"alice"`))
		}
	}
	t.Fatalf("dashboards/queries.txt has no panel %s / %q", uid, title)
	return ""
}

// Three laptops, two users, one receiver with the shipped rules. Alice
// runs the exporter on two laptops; each reads local thread files of its
// own and both follow her Amp server account (an Amp server stand-in), so
// each pushes her whole server history. Bob has one laptop with local
// threads only. At the receiver a plain sum counts alice's server threads
// twice; the shipped fleet rules and the dashboards' inline form count
// them once — the account's usage, computed from the stand-in's documents
// — and the local threads add up over the laptops. Before and after a
// receiver outage during which the account and two laptops got new
// threads.
func TestRemoteWriteTeamCountsEachUserOnce(t *testing.T) {
	srv := newAmpServerStandIn(t)
	// What Amp bills per thread (threadDisplayCostInfo), kind "paid".
	paid := map[string]float64{}
	bill := func(id string, usd float64) {
		paid[id] = usd
		srv.SetCost(id, map[string]any{"title": "billed", "totalCostUSD": usd,
			"costBreakdown": map[string]any{"paidUSD": usd}})
	}
	ids := srv.IDs()
	bill(ids[0], 0.125)
	bill(ids[1], 0.5)
	// addServerThread gives the account a new billed thread, as using Amp
	// on any of alice's laptops does. The touch after the bill makes a
	// laptop that fetched the thread before it was billed fetch it again.
	addServerThread := func(id string, output int, usd float64) {
		if _, err := srv.Put(threadJSON(id, "claude-sonnet-4-5-20250929", 1, output), time.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
		bill(id, usd)
		srv.Touch(id, time.Now().UnixMilli()+1)
	}

	follow := []string{"AMP_API_KEY=" + standinKey, "AMP_URL=" + srv.URL}
	const syncFast = "amp_server:\n  sync_interval: 1s\n"
	members := []fleetMember{
		{user: "alice", host: "laptop-1", env: follow, extra: syncFast},
		{user: "alice", host: "laptop-2", env: follow, extra: syncFast},
		{user: "bob", host: "laptop-3"},
	}
	corpora := [][]string{
		{"usage-era.json", "ledger-era.json", "garbage.json"},
		{"both-eras.json", "fork-child.json"},
		{"openai-streaming.json", "cancelled-and-errors.json", "legacy-no-timestamps.json"},
	}
	// The dashboards' inline fleet counting on current totals: the shipped
	// "Tokens by type" panel with each rate(x[$__rate_interval]) read as x,
	// and the shipped "Spend today" stat run as Grafana runs it, a range
	// query from before the first push (so its start has no samples and
	// it shows the whole total).
	tokensPanel := shippedPanel(t, "amp-overview", "Tokens by type")
	if n := strings.Count(tokensPanel, "[1m]"); n == 0 || !strings.HasSuffix(tokensPanel, " * 60") {
		t.Fatalf("the Tokens by type panel changed shape: %s", tokensPanel)
	}
	tokensPanel = strings.NewReplacer("rate(", "(", "[1m]", "").Replace(strings.TrimSuffix(tokensPanel, " * 60")) + " > 0"
	spendPanel := shippedPanel(t, "amp-overview", "Spend today")
	begin := time.Now().Add(-time.Second)

	rules := filepath.Join(repoRoot, "deploy", "rules", "amp-exporter.rules.yml")
	data, port := t.TempDir(), freePort(t)
	rcv := startReceiver(t, data, port, rules)
	exps := make([]*exporter, len(members))
	for i := range members {
		members[i].threads = t.TempDir()
		copyFixtures(t, members[i].threads, corpora[i]...)
		exps[i] = startPushingExporter(t, members[i], rcv.base)
	}

	isServer := func(s string) bool { return s == "server" }
	isLocal := func(s string) bool { return s != "server" }
	checkTeam := func() {
		t.Helper()
		account := accountTokens(t, srv)
		var billed float64
		for _, v := range paid {
			billed += v
		}
		if account["output"] == 0 || billed == 0 {
			t.Fatalf("the account has nothing to count: %s, billed %v", formatVector(account), billed)
		}
		// Each of alice's laptops follows the whole account: the same
		// server numbers on both, the account's.
		serverCost := -1.0
		for i, e := range exps {
			if members[i].env == nil {
				continue
			}
			e.waitFor(t, 30*time.Second, members[i].host+" follows the whole account",
				func(mfs map[string]*dto.MetricFamily) (bool, string) {
					got := nonzero(byLabel(mfs, "amp_tokens_total", "token_type", isServer))
					b, _ := value(mfs, "amp_billed_cost_usd_total", map[string]string{"source": "server", "kind": "paid"})
					return closeVectors(got, account) && closeVectors(map[string]float64{"": b}, map[string]float64{"": billed}),
						fmt.Sprintf("tokens %s, billed %v; the account's: %s, %v", formatVector(got), b, formatVector(account), billed)
				})
			c := byLabel(e.metrics(t), "amp_cost_usd_total", "source", isServer)["server"]
			if serverCost < 0 {
				serverCost = c
			} else if !closeVectors(map[string]float64{"": c}, map[string]float64{"": serverCost}) {
				t.Fatalf("the laptops price the account differently: %v and %v", serverCost, c)
			}
		}
		if serverCost <= 0 {
			t.Fatalf("the account's threads cost %v", serverCost)
		}

		// Local threads: per user, summed over the user's laptops.
		local := map[string]map[string]float64{} // user -> token_type
		localCost := map[string]float64{}        // user
		for i, e := range exps {
			mfs := e.metrics(t)
			u := members[i].user
			local[u] = plus(local[u], byLabel(mfs, "amp_tokens_total", "token_type", isLocal))
			for _, v := range byLabel(mfs, "amp_cost_usd_total", "model", isLocal) {
				localCost[u] += v
			}
		}
		if localCost["alice"] == 0 || localCost["bob"] == 0 {
			t.Fatalf("the local corpora cost nothing: %v", localCost)
		}
		for _, user := range []string{"alice", "bob"} {
			if len(local[user]) == 0 {
				t.Fatalf("user %s counted no local tokens", user)
			}
			want := local[user]
			if user == "alice" {
				want = plus(want, account)
			}
			// The raw pushed series, summed: what each laptop counted.
			waitQuery(t, rcv, fmt.Sprintf(`sum by (token_type) (amp_tokens_total{user=%q,source!="server"})`, user), "token_type", local[user], 30*time.Second)
			// The shipped fleet rule: each thread once.
			waitQuery(t, rcv, fmt.Sprintf(`sum by (token_type) (user:amp_tokens_total:fleet{user=%q}) > 0`, user), "token_type", nonzero(want), 30*time.Second)
		}

		// The trap: alice's server threads, summed plainly over her
		// laptops, count twice; the fleet rule counts them once.
		waitQuery(t, rcv, `sum by (token_type) (amp_tokens_total{user="alice",source="server"}) > 0`, "token_type", scaled(account, 2), 30*time.Second)
		waitQuery(t, rcv, `sum by (token_type) (user:amp_tokens_total:fleet{user="alice",source="server"}) > 0`, "token_type", account, 30*time.Second)
		waitQuery(t, rcv, tokensPanel, "token_type", nonzero(plus(local["alice"], account)), 30*time.Second)
		// What Amp bills, the same way.
		waitQuery(t, rcv, `sum(amp_billed_cost_usd_total{user="alice"})`, "", map[string]float64{"": 2 * billed}, 30*time.Second)
		waitQuery(t, rcv, `sum by (user) (user:amp_billed_cost_usd_total:fleet)`, "user", map[string]float64{"alice": billed}, 30*time.Second)
		// The estimated spend: alice's server threads once, all local ones.
		waitQuery(t, rcv, `sum(amp_cost_usd_total{user="alice",source="server"})`, "", map[string]float64{"": 2 * serverCost}, 30*time.Second)
		waitQuery(t, rcv, `sum by (user) (user:amp_cost_usd_total:fleet)`, "user",
			map[string]float64{"alice": localCost["alice"] + serverCost, "bob": localCost["bob"]}, 30*time.Second)
		wantSpend := map[string]float64{"": localCost["alice"] + serverCost}
		waitCond(t, 30*time.Second, "Spend today for alice", func() (bool, string) {
			got, err := queryRangeLast(rcv, spendPanel, "", begin)
			return err == nil && closeVectors(got, wantSpend), fmt.Sprintf("got %s (err %v), want %s", formatVector(got), err, formatVector(wantSpend))
		})
	}
	checkTeam()

	// Alice uses Amp: the account gets a new billed thread. Both laptops
	// push the higher bill; the billed burn rate counts it once per user,
	// a plain sum of the laptops' rates twice. Not exactly twice: the two
	// hosts' rates differ by rate()'s extrapolation at the ends of their
	// samples, and the rule was evaluated up to a second before the query
	// (a percent or two, against a factor of two).
	addServerThread("T-5e2b9c3d-0000-4000-8000-0000000000a1", 2500, 0.25)
	// An existing thread's bill grows too: the new thread (no git remote)
	// may be the first under its repository value, and a series' first
	// sample is no growth to rate(); the grown bill is, in a series both
	// laptops already push.
	bill(ids[0], paid[ids[0]]+0.25)
	srv.Touch(ids[0], time.Now().UnixMilli()+1)
	checkTeam()
	waitCond(t, 30*time.Second, "amp:billed_usd_per_hour:rate15m counts alice once", func() (bool, string) {
		got, err := rcv.query(`sum(rate(amp_billed_cost_usd_total{source="server"}[15m])) * 3600 / amp:billed_usd_per_hour:rate15m`, "")
		r, ok := got[""]
		return err == nil && ok && r > 1.5 && r < 2.5, fmt.Sprintf("plain sum of the laptops' rates / rule = %v (err %v)", r, err)
	})

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
	// and bob's laptop count new local threads, alice's account gets a new
	// thread, all of them drop their pushes; the receiver comes back on
	// the same data, and the team numbers catch up.
	if err := rcv.stop(); err != nil {
		t.Fatalf("receiver stop: %v", err)
	}
	for i, out := range map[int]int{1: 1234, 2: 4321} {
		id := fmt.Sprintf("T-7d1f0c2a-0000-4000-8000-00000000000%d", i)
		before := byLabel(exps[i].metrics(t), "amp_tokens_total", "token_type", isLocal)["output"]
		writeThreadLikeAmp(t, members[i].threads, id+".json", threadJSON(id, "claude-sonnet-4-5-20250929", 1, out))
		exps[i].waitFor(t, 20*time.Second, members[i].host+" counts the new thread and drops pushes",
			func(mfs map[string]*dto.MetricFamily) (bool, string) {
				got := byLabel(mfs, "amp_tokens_total", "token_type", isLocal)["output"]
				dropped, _ := value(mfs, "amp_exporter_remote_write_samples_total", map[string]string{"result": "dropped"})
				return got == before+float64(out) && dropped > 0, fmt.Sprintf("output %v (before %v), dropped %v", got, before, dropped)
			})
	}
	addServerThread("T-5e2b9c3d-0000-4000-8000-0000000000a2", 3100, 0.375)
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
