package ampservertest_test

// The stand-in is only worth what its shapes are: tests of the server
// source pass or fail against it. This test holds it to the real Amp CLI:
// `amp threads export <id>`, run offline against the stand-in, must print
// the same document the exporter's client assembles, for threads of every
// length (one tail, several 200-message pages, pages that end exactly).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testsize"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/source/ampserver"
)

// ampCLIVersion is the Amp CLI that scripts/test-deps.sh fetches.
const ampCLIVersion = "0.0.1790142911-g7618fb"

// ampCLI finds the Amp CLI: $AMP_CLI, else the copy test-deps.sh fetched
// into .cache/. Where no build is fetched (another platform) the test
// skips; on linux/amd64 in CI it fails instead.
func ampCLI(t *testing.T) string {
	t.Helper()
	p := os.Getenv("AMP_CLI")
	if p == "" {
		p = filepath.Join("..", "..", "..", ".cache", "amp-cli", ampCLIVersion, "amp")
	}
	if _, err := os.Stat(p); err == nil {
		abs, _ := filepath.Abs(p)
		return abs
	}
	msg := fmt.Sprintf("the Amp CLI %s is not at %s: run `bash scripts/test-deps.sh amp-cli-path` (or set AMP_CLI)", ampCLIVersion, p)
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" && os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("no Amp CLI build is fetched for %s/%s: %s", runtime.GOOS, runtime.GOARCH, msg)
	}
	t.Skip(msg)
	return ""
}

const conformanceKey = "sgamp_conformance_0123456789"

// cliEnv is an environment for the CLI that points it at url with key, in
// a home of its own, with update checks off. Nothing of the caller's
// environment is passed (no proxy, no key, no settings).
func cliEnv(t *testing.T, url, key string) []string {
	t.Helper()
	home := t.TempDir()
	data := filepath.Join(home, ".local", "share")
	config := filepath.Join(home, ".config")
	cache := filepath.Join(home, ".cache")
	for _, d := range []string{filepath.Join(data, "amp"), filepath.Join(config, "amp"), cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The CLI keeps a custom URL as typed: the key is stored under it
	// without a trailing slash.
	secrets, _ := json.Marshal(map[string]string{"apiKey@" + url: key})
	if err := os.WriteFile(filepath.Join(data, "amp", "secrets.json"), secrets, 0o600); err != nil {
		t.Fatal(err)
	}
	settings := []byte(`{"amp.updates.mode": "disabled"}`)
	if err := os.WriteFile(filepath.Join(config, "amp", "settings.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{
		"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_DATA_HOME=" + data, "XDG_CONFIG_HOME=" + config,
		"XDG_CACHE_HOME=" + cache, "AMP_URL=" + url, "AMP_SKIP_UPDATE_CHECK=1", "NO_COLOR=1", "TERM=dumb",
	}
}

// export runs `amp threads export id` with a bounded time and returns what
// it prints.
func export(cli string, env []string, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "threads", "export", id)
	cmd.Env = env
	cmd.Stdin = nil
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("amp threads export: %w: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	return out.Bytes(), nil
}

// The shapes of thread the conformance test picks out: how its messages
// fall into the 200-message pages the CLI asks for.
const (
	shapeOnePage        = "exactly one page"
	shapeTwoPagesStale  = "exactly two pages, a stale messages key"
	shapeTwoPagesAndOne = "two pages and one message"
	shapeManyPages      = "many pages, the last one short"
	shapeShortStale     = "under one page, a stale messages key"
	shapeEmpty          = "no messages"
)

// shortShapes are the shapes the short size exports: one of each way the
// last answer can end (a tail with no messages, a full page with no next
// index, a short page), each way of reading `data` (with and without a
// stale messages key). The long size exports every thread, these and the
// other shapes among them (a thread within one page, one page exactly,
// two pages and one message).
var shortShapes = []string{shapeTwoPagesStale, shapeManyPages, shapeEmpty}

// conformanceServer holds 24 threads: generated ones, several grown past
// one 200-message page (exactly 200, 201, 400, 401 and over 1,000
// messages), one with no messages, and two whose `data` carries a stale
// `messages` key of its own. It returns every id, and the id of one
// thread of each shape (shapes, by name).
func conformanceServer(t *testing.T) (srv *ampservertest.Server, ids []string, shapes map[string]string) {
	t.Helper()
	srv = ampservertest.New(conformanceKey, "dev@example.com")
	t.Cleanup(srv.Close)
	// With speeds: the assistant messages' usage names fast and plaid in
	// its features, which the CLI's export must keep as the stand-in
	// serves them.
	g := threadgen.New(threadgen.Options{Threads: 24, TotalBytes: 24 * 30_000, Seed: 17, Speeds: true})
	if err := srv.PutGenerated(g, 0, 23); err != nil {
		t.Fatal(err)
	}
	// One thread without messages.
	_, doc := g.Thread(23)
	var empty map[string]json.RawMessage
	if err := json.Unmarshal(doc, &empty); err != nil {
		t.Fatal(err)
	}
	empty["messages"] = json.RawMessage("[]")
	b, _ := json.Marshal(empty)
	if _, err := srv.Put(b, 0); err != nil {
		t.Fatal(err)
	}
	ids = srv.IDs()
	grow := []int{200, 201, 400, 401, 1033, 199}
	grown := map[int]string{200: shapeOnePage, 400: shapeTwoPagesStale, 401: shapeTwoPagesAndOne, 1033: shapeManyPages}
	shapes = map[string]string{}
	var stale []string
	for _, id := range ids {
		var d struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(srv.Document(id), &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Messages) == 0 {
			shapes[shapeEmpty] = id
			continue
		}
		if len(grow) > 0 && grown[grow[0]] != "" {
			shapes[grown[grow[0]]] = id
		}
		if len(grow) == 4 || (len(grow) == 0 && len(stale) < 2) {
			stale = append(stale, id) // one of 400 messages, one short
			if len(grow) == 0 {
				shapes[shapeShortStale] = id
			}
		}
		if len(grow) == 0 {
			continue
		}
		for k := len(d.Messages); k < grow[0]; k++ {
			srv.AppendMessage(id, d.Messages[k%len(d.Messages)], 0)
		}
		grow = grow[1:]
	}
	for _, id := range stale {
		srv.StaleMessagesInData(id)
	}
	// The documents the CLI is compared on hold both faster speeds.
	for _, speed := range []string{`"features":["fast"]`, `"features":["fast","plaid"]`} {
		found := false
		for _, id := range srv.IDs() {
			found = found || bytes.Contains(bytes.ReplaceAll(srv.Document(id), []byte(" "), nil), []byte(speed))
		}
		if !found {
			t.Fatalf("no document of the stand-in has a usage with %s", speed)
		}
	}
	return srv, srv.IDs(), shapes
}

func parseJSON(b []byte) (any, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// compare exports every thread with the CLI and with the exporter's
// client and returns the ids whose documents differ (or that the CLI could
// not export), with a reason each. A thread the client cannot export
// differs whatever the CLI prints: at the short size its CLI export is
// left out (each costs about two CPU-seconds), at the long size it is
// run all the same.
func compare(t *testing.T, cli string, srv *ampservertest.Server, ids []string) map[string]string {
	t.Helper()
	env := cliEnv(t, srv.URL, conformanceKey)
	c, err := ampserver.NewClient(ampserver.Options{URL: srv.URL, Key: func() (string, error) { return conformanceKey, nil }})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	diff := map[string]string{}
	sem := make(chan struct{}, 2) // the machine is shared: two CLIs at a time
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fail := func(format string, args ...any) {
				mu.Lock()
				diff[id] = fmt.Sprintf(format, args...)
				mu.Unlock()
			}
			ex, clientErr := c.ExportThread(context.Background(), id, 256<<20)
			if clientErr != nil && !testsize.Long() {
				fail("client: %v", clientErr)
				return
			}
			printed, err := export(cli, env, id)
			if err != nil {
				fail("%v", err)
				return
			}
			want, err := parseJSON(printed)
			if err != nil {
				fail("the CLI printed no JSON document: %v", err)
				return
			}
			if clientErr != nil {
				fail("client: %v", clientErr)
				return
			}
			got, err := parseJSON(ex.Doc)
			if err != nil {
				fail("client document: %v", err)
				return
			}
			if !reflect.DeepEqual(got, want) {
				fail("the client's document differs from the CLI's (%d and %d bytes)", len(ex.Doc), len(printed))
			}
		}()
	}
	wg.Wait()
	return diff
}

// Every thread at the long size (make test); the short shapes at the
// short (go test ./...): each export starts the CLI, which costs about two
// CPU-seconds however short the thread.
func TestStandInConformsToTheAmpCLI(t *testing.T) {
	cli := ampCLI(t)
	srv, ids, shapes := conformanceServer(t)
	if len(ids) < 20 || len(shapes) != 6 {
		t.Fatalf("%d threads, %d of them of a shape of their own, want at least 20 and 6: %v", len(ids), len(shapes), shapes)
	}
	messages := func(id string) int {
		var d struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(srv.Document(id), &d)
		return len(d.Messages)
	}
	for shape, n := range map[string]int{shapeOnePage: 200, shapeTwoPagesStale: 400, shapeTwoPagesAndOne: 401, shapeManyPages: 1033, shapeEmpty: 0} {
		if got := messages(shapes[shape]); got != n {
			t.Fatalf("the thread of %s has %d messages, want %d", shape, got, n)
		}
	}
	if n := messages(shapes[shapeShortStale]); n == 0 || n >= ampserver.PageSize {
		t.Fatalf("the thread of %s has %d messages", shapeShortStale, n)
	}
	// Two long threads at the short size, several at the long.
	wantLong := 2
	if !testsize.Long() {
		ids = nil
		for _, shape := range shortShapes {
			ids = append(ids, shapes[shape])
		}
	} else {
		wantLong = 3
	}
	long := 0
	for _, id := range ids {
		if messages(id) > ampserver.PageSize {
			long++
		}
	}
	if long < wantLong {
		t.Fatalf("%d threads longer than one page, want at least %d", long, wantLong)
	}
	srv.Reset()
	diff := compare(t, cli, srv, ids)
	for id, why := range diff {
		t.Errorf("%s: %s", id, why)
	}
	// The CLI really paged (so the pages' shape was judged too).
	if r := srv.Requests(); r[ampserver.MethodGetThreadMessagesPage] < 2*long {
		t.Errorf("requests %v: the long threads were not paged", r)
	}
	// And the documents are the stand-in's own.
	for _, id := range ids[:3] {
		ex, err := mustClient(t, srv).ExportThread(context.Background(), id, 256<<20)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := parseJSON(ex.Doc)
		b, _ := parseJSON(srv.Document(id))
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the exported document is not the stand-in's", id)
		}
	}
}

// A stand-in that answers in another shape than the real server's (here
// the earlier, wrong description: the document as `thread`) is caught:
// for two threads at the long size, one at the short (where the client's
// refusal decides it without the CLI's export, see compare).
func TestConformanceCatchesAStandInThatDrifts(t *testing.T) {
	cli := ampCLI(t)
	srv, ids, _ := conformanceServer(t)
	srv.LegacyShape()
	n := 1
	if testsize.Long() {
		n = 2
	}
	diff := compare(t, cli, srv, ids[:n])
	if len(diff) != n {
		t.Fatalf("a stand-in in the wrong shape passed for %d of %d threads: %v", n-len(diff), n, diff)
	}
	for _, why := range diff {
		if !strings.Contains(why, "differs") && !strings.Contains(why, "client") {
			t.Errorf("unexpected failure: %s", why)
		}
	}
}

func mustClient(t *testing.T, srv *ampservertest.Server) *ampserver.Client {
	t.Helper()
	c, err := ampserver.NewClient(ampserver.Options{URL: srv.URL, Key: func() (string, error) { return conformanceKey, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
