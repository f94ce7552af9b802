package ampstandin

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/threadgen"
)

func call(t *testing.T, s *Server, key, method string, params any) (int, map[string]json.RawMessage) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/internal?"+method, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var env map[string]json.RawMessage
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("%s: not an envelope: %s", method, b)
	}
	return resp.StatusCode, env
}

func TestStandInSpeaksTheAPI(t *testing.T) {
	s := New("k", "a@b")
	defer s.Close()
	if err := s.PutGenerated(threadgen.New(threadgen.Options{Threads: 7, TotalBytes: 100_000, Seed: 2}), 0, 7); err != nil {
		t.Fatal(err)
	}
	if code, env := call(t, s, "wrong", "getUserInfo", nil); code != 401 || !bytes.Contains(env["error"], []byte("auth-required")) {
		t.Fatalf("wrong key: %d %s", code, env["error"])
	}
	// Listing pages, newest first.
	var ids []string
	for offset := 0; ; offset += 3 {
		code, env := call(t, s, "k", "listThreads", map[string]any{"limit": 3, "offset": offset})
		if code != 200 {
			t.Fatalf("list: %d", code)
		}
		var res struct {
			Threads []struct{ ID string }
		}
		_ = json.Unmarshal(env["result"], &res)
		for _, th := range res.Threads {
			ids = append(ids, th.ID)
		}
		if len(res.Threads) < 3 {
			break
		}
	}
	if len(ids) != 7 || ids[0] != s.IDs()[0] {
		t.Fatalf("listed %v", ids)
	}
	// Tail plus pages give back the whole document.
	id := ids[2]
	var want struct{ Messages []json.RawMessage }
	_ = json.Unmarshal(s.Document(id), &want)
	var got []json.RawMessage
	for from := 0; ; {
		_, env := call(t, s, "k", "getThreadMessagesPage", map[string]any{"thread": id, "fromIndex": from, "limit": 2})
		var p struct {
			Messages []json.RawMessage
			Next     *int `json:"nextMessageIndex"`
		}
		_ = json.Unmarshal(env["result"], &p)
		got = append(got, p.Messages...)
		if p.Next == nil {
			break
		}
		from = *p.Next
	}
	if len(got) != len(want.Messages) || len(got) == 0 {
		t.Fatalf("paged %d messages, want %d", len(got), len(want.Messages))
	}
	s.Vanish(id)
	if code, env := call(t, s, "k", "getThreadTail", map[string]any{"thread": id, "limit": 1}); code != 404 || !bytes.Contains(env["error"], []byte("thread-not-found")) {
		t.Fatalf("vanished: %d", code)
	}
	s.Fail("listThreads", Fault{Status: 429, RetryAfter: "3"})
	if code, _ := call(t, s, "k", "listThreads", map[string]any{"limit": 1}); code != 429 {
		t.Fatalf("fault: %d", code)
	}
	r := s.Requests()
	if r["listThreads"] != 4 || r["getUserInfo"] != 1 || s.BytesServed() == 0 {
		t.Fatalf("counts %v %d", r, s.BytesServed())
	}
}
