package ampserver

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/testsize"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
	"github.com/klauspost/compress/zstd"
)

// TestPooledBodiesCountAsFiles: answers read into pooled buffers, messages
// parsed where they lie, and the buffers reused once a thread is counted
// (overwritten when given back, so a use after release shows) count what
// the documents read as files count: on a first sync over pages, after
// growth read by window, whatever the encoding, with workers in parallel.
//
// The documents are 2 MiB in all at the short size, 6 MiB at the long.
func TestPooledBodiesCountAsFiles(t *testing.T) {
	t.Cleanup(bodies.Scribble())
	total := int64(2 << 20)
	if testsize.Long() {
		total = 6 << 20
	}
	for _, enc := range []string{"gzip", "zstd", "identity"} {
		t.Run(enc, func(t *testing.T) {
			h := newHarness(t, 1, SyncConfig{ListLimit: 500, MaxConcurrency: 3, WindowOverlap: 4})
			g := threadgen.New(threadgen.Options{Threads: 9, TotalBytes: total, Seed: 23})
			if err := h.srv.PutGenerated(g, 0, g.Len()); err != nil {
				t.Fatal(err)
			}
			switch enc {
			case "zstd":
				h.srv.EnableZstd()
			case "identity":
				h.srv.DisableGzip()
			}
			ids := h.srv.IDs()
			h.syncOK()
			if r := h.srv.Requests(); r[MethodGetThreadMessagesPage] == 0 {
				t.Fatalf("no thread read by pages: %v", r)
			}
			if got, want := counts(h.store), h.want(ids); !reflect.DeepEqual(got, want) {
				t.Fatalf("first sync counts differ from the documents read as files")
			}
			for round := range 3 {
				h.clk.Advance(time.Minute)
				now := h.clk.Now().UnixMilli()
				for i, id := range ids {
					if (i+round)%2 == 0 {
						h.srv.AppendMessage(id, h.lastMessage(id), now+int64(i))
					}
				}
				h.syncOK()
				if got, want := counts(h.store), h.want(ids); !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d: counts differ from the documents read as files", round)
				}
			}
			if h.sync.WindowStats().Windows == 0 {
				t.Fatal("no thread read by window")
			}
		})
	}
}

// counts are the store's counts without the windows it keeps (a store of
// files keeps none).
func counts(s *store.ThreadStore) map[string]store.ThreadState {
	st := countedThreads(s)
	for k, v := range st {
		v.Window = nil
		st[k] = v
	}
	return st
}

// TestExportPartsAreTheDocument: an export parsed from its parts reads as
// the document ExportThread builds, and its Size is that document's
// length, whole and from an index.
func TestExportPartsAreTheDocument(t *testing.T) {
	h := newHarness(t, 6, SyncConfig{})
	c := newTestClient(t, h.srv.URL, h.rec, nil)
	ctx := context.Background()
	p1, p2 := thread.NewParser(), thread.NewParser()
	for _, id := range h.srv.IDs() {
		whole, err := c.ExportThread(ctx, id, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := c.exportThread(ctx, id, 1<<30, false)
		if err != nil {
			t.Fatal(err)
		}
		if parts.Doc != nil || parts.Size != int64(len(whole.Doc)) || whole.Size != int64(len(whole.Doc)) {
			t.Fatalf("size %d and %d, document %d bytes", parts.Size, whole.Size, len(whole.Doc))
		}
		same(t, p1, p2, whole.Doc, parts)
		n := len(parts.Messages)
		from, err := c.ExportFrom(ctx, id, n/2, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := assemble(from.Data, from.From, from.Messages)
		if err != nil || from.Size != int64(len(doc)) {
			t.Fatalf("window size %d, document %d bytes (%v)", from.Size, len(doc), err)
		}
		same(t, p1, p2, doc, from)
		parts.Release()
		from.Release()
		if parts.Messages != nil {
			t.Fatal("messages still there after release")
		}
	}
}

func same(t *testing.T, p1, p2 *thread.Parser, doc []byte, ex Export) {
	t.Helper()
	a, err1 := p1.ParseBytes(doc)
	b, err2 := ex.Parse(p2)
	if err1 != nil || err2 != nil {
		t.Fatalf("parse: %v, %v", err1, err2)
	}
	if len(a.Messages) == 0 || !reflect.DeepEqual(a.Messages, b.Messages) {
		t.Fatalf("parts read %d messages, the document %d", len(b.Messages), len(a.Messages))
	}
	sa, sb := thread.Summarize(a), thread.Summarize(b)
	if !reflect.DeepEqual(sa.Items, sb.Items) || !reflect.DeepEqual(sa.Tokens, sb.Tokens) {
		t.Fatal("parts summarize otherwise than the document")
	}
}

// TestReadAllPooled: a body read into pooled buffers is the body, whatever
// its size against the hint and the size classes, and a buffer from the
// pool always holds what was asked for.
func TestReadAllPooled(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 64<<10 - 1, 64 << 10, 64<<10 + 1, 3<<20 + 7} {
		for _, hint := range []int64{0, 1, 100, 64 << 10, 1 << 20} {
			body := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
			buf, err := readAll(iotest.HalfReader(bytes.NewReader(body)), hint)
			if err != nil || !bytes.Equal(*buf, body) {
				t.Fatalf("%d bytes, hint %d: got %d bytes, %v", n, hint, len(*buf), err)
			}
			putBody(buf)
		}
	}
	// The last just past the largest class (bodies' 1<<27): allocated, not
	// pooled.
	for _, n := range []int64{1, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1<<20 + 1, 1<<27 + 1} {
		for range 3 {
			b := getBody(n)
			if len(*b) != 0 || int64(cap(*b)) < n {
				t.Fatalf("asked %d, got len %d cap %d", n, len(*b), cap(*b))
			}
			*b = append(*b, strings.Repeat("x", 10)...)
			putBody(b)
		}
	}
}

// TestClientBadZstd: a zstd answer that does not inflate (not zstd, cut
// short) is a transient failure, and its buffers are given back.
func TestClientBadZstd(t *testing.T) {
	var good bytes.Buffer
	zw, _ := zstd.NewWriter(&good)
	_, _ = zw.Write([]byte(`{"ok":true,"result":{"messages":[{"role":"user"}],"nextMessageIndex":null}}`))
	_ = zw.Close()
	for _, tc := range []struct {
		name string
		body []byte
		want error
	}{
		{"not zstd", []byte("not zstd at all"), ErrTransient},
		{"cut short", good.Bytes()[:good.Len()-6], ErrTransient},
		{"whole", good.Bytes(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "zstd")
				_, _ = w.Write(tc.body)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, &recorder{}, func(o *Options) { o.Retries = -1 })
			var p Page
			err := c.Call(context.Background(), MethodGetThreadMessagesPage, nil, &p)
			if tc.want == nil {
				if err != nil || len(p.Messages) != 1 || string(p.Messages[0]) != `{"role":"user"}` {
					t.Fatalf("%+v %v", p, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}
