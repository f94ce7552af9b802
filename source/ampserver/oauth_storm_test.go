package ampserver

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/store"
)

// raceExporter is one exporter of the race harness: its own key (the
// same secrets.json), client, store and syncer, on the env's fake clock.
type raceExporter struct {
	key    Key
	client *Client
	syncer *Syncer
}

func (e *oauthEnv) exporter(pause time.Duration) *raceExporter {
	e.t.Helper()
	k, err := FindKeyWith(KeyOptions{URL: e.o.URL + "/", Env: KeyEnv{Getenv: envOf(map[string]string{"XDG_DATA_HOME": e.data}), Home: e.t.TempDir()},
		RefreshLogin: true, OAuth: OAuthOptions{Now: e.clk.Now, Logger: e.logger(), Sleep: sleep, Pause: pause}})
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := NewClient(Options{URL: e.o.URL + "/", Keys: k, Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		e.t.Fatal(err)
	}
	owners := store.NewOwners()
	st := store.NewThreadStore(store.StoreOptions{Now: e.clk.Now})
	st.SetClaim(owners, store.SourceAmpServer)
	syncer := NewSyncer(c, SyncConfig{Interval: time.Minute, FullInterval: time.Hour, IncludeArchived: true,
		MaxConcurrency: 2, MaxThreadBytes: 64 << 20}, st, SyncOptions{Owners: owners, Logger: e.logger(), Clock: e.clk})
	return &raceExporter{key: k, client: c, syncer: syncer}
}

// putThreads gives the stand-in n threads to sync, of bytesPerThread.
func (e *oauthEnv) putThreads(n int, bytesPerThread int64) []string {
	e.t.Helper()
	g := threadgen.New(threadgen.Options{Threads: n, TotalBytes: int64(n) * bytesPerThread, Seed: 5})
	if err := e.back.PutGenerated(g, 0, n); err != nil {
		e.t.Fatal(err)
	}
	return e.back.IDs()
}

// touch appends a message to thread id, so that a sync has something to
// fetch.
func (e *oauthEnv) touch(id string) {
	e.t.Helper()
	var doc struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(e.back.Document(id), &doc); err != nil || len(doc.Messages) == 0 {
		e.t.Fatal(err)
	}
	e.back.AppendMessage(id, doc.Messages[len(doc.Messages)-1], e.clk.Now().UnixMilli())
}

// stormRun is what one run of the shared-login harness saw.
type stormRun struct {
	minutes     float64
	rotations   int
	requests    int
	refused     int
	syncs       int
	failedSyncs int
	cli         map[string]int
}

func (r stormRun) perMinute() float64 { return float64(r.rotations) / r.minutes }

// runSharedLogin is the harness: a CLI process active all along (it uses
// the login every 5 to 25 s of the fake clock, refreshing it by its own
// rules) and `exporters` exporters that sync once a minute each, a
// little apart, all on one secrets.json, for `minutes` of fake time. The
// CLI and the syncs of a step run at once, as separate processes would.
func runSharedLogin(t *testing.T, lifetime time.Duration, exporters int, minutes int, seed uint64) (stormRun, *oauthEnv) {
	t.Helper()
	e := newOAuthEnv(t, lifetime)
	var ids []string
	if exporters > 0 {
		ids = e.putThreads(20, 1_000)
	}
	ex := make([]*raceExporter, exporters)
	last := make([]time.Time, exporters)
	for i := range ex {
		ex[i] = e.exporter(100 * time.Millisecond)
		// All started at once (as by one compose file): their syncs
		// overlap, the worst case.
		last[i] = e.clk.Now().Add(-time.Minute)
	}
	rng := rand.New(rand.NewPCG(seed, 4))
	run := stormRun{cli: map[string]int{}}
	start := e.clk.Now()
	end := start.Add(time.Duration(minutes) * time.Minute)
	for e.clk.Now().Before(end) {
		e.clk.Advance(time.Duration(5+rng.IntN(21)) * time.Second)
		var wg sync.WaitGroup
		var out string
		wg.Add(1)
		go func() {
			defer wg.Done()
			out = cliRefresh(e.secrets, e.cliURL, e.clk.Now)
		}()
		errs := make([]error, exporters)
		synced := make([]bool, exporters)
		for i, x := range ex {
			if e.clk.Now().Sub(last[i]) < time.Minute {
				continue
			}
			synced[i], last[i] = true, e.clk.Now()
			for _, id := range ids { // something to fetch: a sync of several requests
				e.touch(id)
			}
			run.syncs++
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = x.syncer.Sync(context.Background())
			}()
		}
		wg.Wait()
		run.cli[out]++
		for i := range ex {
			if synced[i] && errs[i] != nil {
				run.failedSyncs++
			}
		}
	}
	run.minutes = e.clk.Now().Sub(start).Minutes()
	run.rotations, run.requests, run.refused = e.o.Stats()
	return run, e
}

// Two exporters and the CLI on one login with 150 s tokens: the CLI alone
// refreshes about twice a minute (every 30 s while it is in use); the two
// exporters must not raise that beyond twice as many. A token another
// exporter just stored is fresh, not due (it was refreshed at once, over
// and over, by each side's every request: 63 refreshes a minute).
func TestOAuthSharedLoginRefreshRate(t *testing.T) {
	const lifetime, minutes = 150 * time.Second, 15
	alone, _ := runSharedLogin(t, lifetime, 0, minutes, 29)
	shared, e := runSharedLogin(t, lifetime, 2, minutes, 29)
	t.Logf("CLI alone: %d refreshes in %.1f min (%.2f/min); CLI + 2 exporters: %d refreshes (%.2f/min), %d refresh requests, %d invalid_grant, %d syncs, %d failed; CLI outcomes %v",
		alone.rotations, alone.minutes, alone.perMinute(), shared.rotations, shared.perMinute(), shared.requests, shared.refused,
		shared.syncs, shared.failedSyncs, shared.cli)
	if alone.rotations == 0 {
		t.Fatal("the CLI alone never refreshed")
	}
	if shared.perMinute() > 2*alone.perMinute() {
		t.Errorf("%.2f refreshes a minute with two exporters, want at most %.2f (twice the CLI's alone)", shared.perMinute(), 2*alone.perMinute())
	}
	for out, n := range shared.cli {
		if strings.HasPrefix(out, "failed") {
			t.Errorf("the CLI lost the login %d times (%s)", n, out)
		}
	}
	if shared.failedSyncs > 0 {
		t.Errorf("%d syncs failed", shared.failedSyncs)
	}
	e.checkFile()
	e.noTokensLogged()
}
