package ampservertest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// rawCall is one request's answer body as sent (uncompressed).
func rawCall(t *testing.T, s *Server, method string, params any) []byte {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/internal?"+method, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %v", method, resp.StatusCode, err)
	}
	return b
}

// TestAnswersAreWhatJSONMarshalWrites: the answers put together from the
// messages' kept JSON are byte for byte what json.Marshal writes of the
// same values (keys sorted, whitespace dropped, <, > and & escaped),
// before and after the thread grows, and with its tail swapped.
func TestAnswersAreWhatJSONMarshalWrites(t *testing.T) {
	s := New("k", "a@b")
	defer s.Close()
	const id = "T-00000000-aaaa-7bbb-8ccc-000000000001"
	msgs := []json.RawMessage{
		json.RawMessage(`{ "role": "user",  "content": [{"type":"text","text":"a <b> & c"}] }`),
		json.RawMessage(`{"role":"assistant","content":[],"usage":{"inputTokens": 3}}`),
		json.RawMessage(`{"role":"user","content":[{"type":"text","text":"\u00e9 ü"}]}`),
	}
	// Written by hand, as a thread file may be: spaced, not escaped.
	doc := []byte(`{"id": "` + id + `", "v": 1, "created": 1000, "title": "x<y",
		"messages": [` + string(msgs[0]) + `, ` + string(msgs[1]) + `]}`)
	if _, err := s.Put(doc, 0); err != nil {
		t.Fatal(err)
	}
	check := func(what string, n int) {
		t.Helper()
		s.mu.Lock()
		th := s.threads[id]
		header, swapped, v := s.header(th), s.swapTail[id], th.head["v"]
		s.mu.Unlock()
		want := map[string]any{"ok": true, "result": map[string]any{"messages": msgs[1:n], "nextMessageIndex": nil}}
		if got, w := rawCall(t, s, "getThreadMessagesPage", map[string]any{"thread": id, "fromIndex": 1, "limit": 10}), marshal(want); !bytes.Equal(got, w) {
			t.Errorf("%s: page\n%s\nwant\n%s", what, got, w)
		}
		tail := append([]json.RawMessage{}, msgs[:n]...)
		if swapped {
			tail[n-2], tail[n-1] = tail[n-1], tail[n-2]
		}
		want = map[string]any{"ok": true, "result": map[string]any{"thread": header, "messages": tail, "hasMoreBefore": false}}
		if got, w := rawCall(t, s, "getThreadTail", map[string]any{"thread": id, "limit": 10}), marshal(want); !bytes.Equal(got, w) {
			t.Errorf("%s: tail\n%s\nwant\n%s", what, got, w)
		}
		var head map[string]json.RawMessage
		_ = json.Unmarshal(doc, &head)
		head["v"] = v
		head["messages"] = marshal(msgs[:n])
		if got, w := s.Document(id), marshal(head); !bytes.Equal(got, w) {
			t.Errorf("%s: document\n%s\nwant\n%s", what, got, w)
		}
	}
	check("as put", 2)
	s.AppendMessage(id, msgs[2], 2000)
	check("grown", 3)
	s.SwapTail(id, true)
	check("tail swapped", 3)
}

// TestOversizedAnswerInflatesToAPaddedPage: an oversized page, sent
// uncompressed, gzip- or zstd-compressed, is the page's envelope with a
// padding string of 80 MiB added last.
func TestOversizedAnswerInflatesToAPaddedPage(t *testing.T) {
	s := New("k", "a@b")
	defer s.Close()
	const id = "T-00000000-aaaa-7bbb-8ccc-000000000001"
	doc := []byte(`{"id":"` + id + `","v":1,"created":1000,"messages":[{"role":"user","content":[]}]}`)
	if _, err := s.Put(doc, 0); err != nil {
		t.Fatal(err)
	}
	params := map[string]any{"thread": id, "fromIndex": 0, "limit": 10}
	page := rawCall(t, s, "getThreadMessagesPage", params)
	head := append(page[:len(page)-1:len(page)-1], `,"padding":"`...)
	s.Oversize(id)
	s.EnableZstd()
	for _, accept := range []string{"identity", "gzip", "zstd"} {
		body, _ := json.Marshal(map[string]any{"method": "getThreadMessagesPage", "params": params})
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/internal?getThreadMessagesPage", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("Accept-Encoding", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var in io.Reader = resp.Body
		switch enc := resp.Header.Get("Content-Encoding"); {
		case accept == "identity" && enc == "":
		case accept == "gzip" && enc == "gzip":
			if in, err = gzip.NewReader(in); err != nil {
				t.Fatal(err)
			}
		case accept == "zstd" && enc == "zstd":
			zr, err := zstd.NewReader(in)
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			in = zr
		default:
			t.Fatalf("%s: answered with Content-Encoding %q", accept, enc)
		}
		err = readPadded(in, head, 80<<20, []byte(`"}`))
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: %v", accept, err)
		}
	}
}

// readPadded reads head, n bytes of "x" and tail from r, and nothing more,
// a chunk at a time.
func readPadded(r io.Reader, head []byte, n int, tail []byte) error {
	got := make([]byte, len(head))
	if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, head) {
		return fmt.Errorf("head %q (%v), want %q", got, err, head)
	}
	buf, xs := make([]byte, 1<<20), bytes.Repeat([]byte("x"), 1<<20)
	for read := 0; read < n; {
		k, err := io.ReadFull(r, buf[:min(len(buf), n-read)])
		if err != nil {
			return fmt.Errorf("padding cut after %d bytes: %w", read+k, err)
		}
		if !bytes.Equal(buf[:k], xs[:k]) {
			return fmt.Errorf("padding at %d–%d not all x", read, read+k)
		}
		read += k
	}
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(rest, tail) {
		return fmt.Errorf("tail %q (%v), want %q", rest, err, tail)
	}
	return nil
}
