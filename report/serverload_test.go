package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/ampservertest"
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
func serverReport(t *testing.T, srv *ampservertest.Server, key, path string, now time.Time, o LoadOptions) int64 {
	t.Helper()
	c, err := OpenServerCache(path)
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
			ampserver.SyncOptions{Owners: owners, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
	var n int64
	for _, e := range l.Entries() {
		n += e.Tokens()
	}
	return n
}

// TestServerThreadWithLaterItemsIsReadAgain: a report made while a
// thread has items stamped after its now leaves them out; the next
// report, later, has them, though the server lists the thread unchanged.
func TestServerThreadWithLaterItemsIsReadAgain(t *testing.T) {
	srv := ampservertest.New("k", "a@example.com")
	t.Cleanup(srv.Close)
	putThread(t, srv, "T-00000000-0000-4000-8000-000000000001", 100, 1000)
	path := CacheFile(t.TempDir(), srv.URL)
	if n := serverReport(t, srv, "k", path, serverT0.Add(30*time.Minute), LoadOptions{}); n != 110 {
		t.Fatalf("report before the second answer: %d tokens, want 110", n)
	}
	if n := serverReport(t, srv, "k", path, serverT0.Add(3*time.Hour), LoadOptions{}); n != 1120 {
		t.Errorf("report after the second answer: %d tokens, want 1120", n)
	}
	if n := serverReport(t, srv, "k", path, serverT0.Add(4*time.Hour), LoadOptions{}); n != 1120 {
		t.Errorf("a third report: %d tokens, want 1120", n)
	}
}
