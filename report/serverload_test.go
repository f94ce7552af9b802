package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/pricing"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/source/ampserver"
	"github.com/amp-exporter/amp-exporter/store"
)

var serverT0 = time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)

// putThread puts a thread of one exchange an hour from serverT0 for
// each output figure: 10 input tokens and out output tokens.
func putThread(t *testing.T, srv *ampservertest.Server, id string, outputs ...int) {
	t.Helper()
	var msgs []map[string]any
	at := serverT0
	for n, out := range outputs {
		msgs = append(msgs, map[string]any{"role": "user", "messageId": fmt.Sprintf("M-prompt%014d", 2*n),
			"content": []any{map[string]any{"type": "text", "text": "prompt"}},
			"meta":    map[string]any{"sentAt": at.UnixMilli()}})
		msgs = append(msgs, map[string]any{"role": "assistant", "messageId": fmt.Sprintf("M-answer%014d", 2*n+1),
			"content": []any{map[string]any{"type": "text", "text": "ok"}},
			"state":   map[string]any{"type": "complete", "stopReason": "end_turn"},
			"usage": map[string]any{"model": "claude-sonnet-4-5-20250929", "maxInputTokens": 200000,
				"inputTokens": 10, "outputTokens": out, "timestamp": at.Add(3 * time.Second).Format(time.RFC3339Nano)}})
		at = at.Add(time.Hour)
	}
	b, err := json.Marshal(map[string]any{"v": 1, "id": id, "created": serverT0.UnixMilli(), "agentMode": "smart", "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Put(b, at.Add(-time.Hour+3*time.Second).UnixMilli()); err != nil {
		t.Fatal(err)
	}
}

// serverReport runs a report of the stand-in's threads (no thread files)
// at now with the cache at path and key, as the report command does, and
// returns its tokens.
func serverReport(t *testing.T, srv *ampservertest.Server, key, path string, now time.Time, o LoadOptions, settings Settings) int64 {
	t.Helper()
	u := serverUsage(t, srv, key, path, now, o, settings)
	return u.Input + u.Output + u.CacheCreation + u.CacheRead
}

// serverUsage is serverReport's whole usage.
func serverUsage(t *testing.T, srv *ampservertest.Server, key, path string, now time.Time, o LoadOptions, settings Settings) Usage {
	t.Helper()
	c, err := OpenServerCache(path, settings.Fingerprint())
	if err != nil {
		t.Fatal(err)
	}
	o.Now, o.Cache = now, c
	o.Server = func(ctx context.Context, c *ServerCache, owners *store.Owners) error {
		client, err := ampserver.NewClient(ampserver.Options{URL: srv.URL, Key: func() (string, error) { return key, nil }, Version: "test"})
		if err != nil {
			return err
		}
		syncer := ampserver.NewSyncer(client, ampserver.SyncConfig{}, c,
			ampserver.SyncOptions{Owners: owners, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				OnAccount: func(u ampserver.UserInfo) { c.UseAccount(u.ID) }})
		_, err = syncer.Sync(ctx)
		return err
	}
	l, _, err := Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	var u Usage
	for _, e := range l.Entries() {
		u.Input += e.Usage.Input
		u.Output += e.Usage.Output
		u.CacheCreation += e.Usage.CacheCreation
		u.CacheRead += e.Usage.CacheRead
		u.Cost += e.Usage.Cost
	}
	return u
}

// TestServerThreadWithLaterItemsIsReadAgain: a report made while a
// thread has items stamped after its now leaves them out; the next
// report, later, has them, though the server lists the thread unchanged.
func TestServerThreadWithLaterItemsIsReadAgain(t *testing.T) {
	srv := ampservertest.New("k", "a@example.com")
	t.Cleanup(srv.Close)
	putThread(t, srv, "T-00000000-0000-4000-8000-000000000001", 100, 1000)
	path := CacheFile(t.TempDir(), srv.URL)
	if n := serverReport(t, srv, "k", path, serverT0.Add(30*time.Minute), LoadOptions{}, Settings{}); n != 110 {
		t.Fatalf("report before the second answer: %d tokens, want 110", n)
	}
	if n := serverReport(t, srv, "k", path, serverT0.Add(3*time.Hour), LoadOptions{}, Settings{}); n != 1120 {
		t.Errorf("report after the second answer: %d tokens, want 1120", n)
	}
	if n := serverReport(t, srv, "k", path, serverT0.Add(4*time.Hour), LoadOptions{}, Settings{}); n != 1120 {
		t.Errorf("a third report: %d tokens, want 1120", n)
	}
}

// TestServerCacheIsPerAccount: a second account on the same server (here
// the same key answering for another user) does not get the first one's
// threads, nor the first the second's; each finds its own again.
func TestServerCacheIsPerAccount(t *testing.T) {
	srv := ampservertest.New("k", "a@example.com")
	t.Cleanup(srv.Close)
	mine, theirs := "T-00000000-0000-4000-8000-000000000001", "T-00000000-0000-4000-8000-000000000002"
	putThread(t, srv, mine, 100)
	putThread(t, srv, theirs, 1000)
	srv.SetCreator(theirs, "user-2")
	path := CacheFile(t.TempDir(), srv.URL)
	now := serverT0.Add(3 * time.Hour)
	for i, c := range []struct {
		user string
		want int64
	}{{ampservertest.DefaultUserID, 110}, {"user-2", 1010}, {ampservertest.DefaultUserID, 110}, {"user-2", 1010}} {
		srv.SetUserID(c.user)
		if n := serverReport(t, srv, "k", path, now, LoadOptions{}, Settings{}); n != c.want {
			t.Errorf("report %d as %s: %d tokens, want %d", i, c.user, n, c.want)
		}
	}
	// The account is in the file as a hash only.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("user-2")) || bytes.Contains(raw, []byte("a@example.com")) {
		t.Errorf("the cache holds the account in clear: %s", raw)
	}
}

// TestServerCacheFollowsSettings: a report under other prices counts
// the cached threads under them, as a report without a cache does.
func TestServerCacheFollowsSettings(t *testing.T) {
	srv := ampservertest.New("k", "a@example.com")
	t.Cleanup(srv.Close)
	putThread(t, srv, "T-00000000-0000-4000-8000-000000000001", 100, 1000)
	path := CacheFile(t.TempDir(), srv.URL)
	now := serverT0.Add(3 * time.Hour)
	for _, usd := range []float64{1, 3, 1} {
		in, out := usd, 5*usd
		prices := pricing.New(nil, "test", "1", map[string]pricing.Price{
			"claude-sonnet-4-5-20250929": pricing.MakePrice(&in, &out, nil, nil)})
		o := LoadOptions{Prices: prices}
		s := Settings{Prices: "test 1", Overrides: map[string]float64{"in": in, "out": out}}
		want := serverUsage(t, srv, "k", "", now, o, s)
		if want.Cost == 0 {
			t.Fatal("no cost counted")
		}
		if got := serverUsage(t, srv, "k", path, now, o, s); got != want {
			t.Errorf("input at $%v: with the cache %+v, without %+v", usd, got, want)
		}
	}
}
