package ampservertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
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

// The stand-in refuses what the CLI's request schemas refuse, with
// invalid-argument, and accepts their edges.
func TestStandInRefusesParamsOutsideTheCLISchemas(t *testing.T) {
	s := New("k", "a@b")
	defer s.Close()
	if err := s.PutGenerated(threadgen.New(threadgen.Options{Threads: 1, TotalBytes: 20_000, Seed: 2}), 0, 1); err != nil {
		t.Fatal(err)
	}
	id := s.IDs()[0]
	ids101 := make([]string, 101)
	for i := range ids101 {
		ids101[i] = id
	}
	empty := ""
	cases := []struct {
		method string
		params map[string]any
		ok     bool
	}{
		{"listThreads", map[string]any{}, true},
		{"listThreads", map[string]any{"limit": 500, "offset": 0}, true},
		{"listThreads", map[string]any{"limit": 0}, false},
		{"listThreads", map[string]any{"limit": 501}, false},
		{"listThreads", map[string]any{"limit": 1.5}, false},
		{"listThreads", map[string]any{"offset": -1}, false},
		{"listThreads", map[string]any{"threadIDs": ids101[:100]}, true},
		{"listThreads", map[string]any{"threadIDs": ids101}, false},
		{"listThreads", map[string]any{"threadIDs": []string{"T-nope"}}, false},
		{"listThreads", map[string]any{"installationID": &empty}, false},
		{"listThreads", map[string]any{"installationID": "inst-1"}, true},
		{"getThreadTail", map[string]any{"thread": id, "limit": 1}, true},
		{"getThreadTail", map[string]any{"thread": id, "limit": 500}, true},
		{"getThreadTail", map[string]any{"thread": id}, false},
		{"getThreadTail", map[string]any{"thread": id, "limit": 501}, false},
		{"getThreadTail", map[string]any{"thread": "x", "limit": 1}, false},
		{"getThread", map[string]any{"thread": id}, true},
		{"getThreadMessagesPage", map[string]any{"thread": id, "fromIndex": 0, "limit": 200}, true},
		{"getThreadMessagesPage", map[string]any{"thread": id, "fromIndex": -1, "limit": 200}, false},
		{"getThreadMessagesPage", map[string]any{"thread": id, "limit": 200}, false},
		{"getThreadMessagesPage", map[string]any{"thread": id, "fromIndex": 0, "limit": 0}, false},
		{"threadDisplayCostInfo", map[string]any{"threadID": id}, true},
		{"threadDisplayCostInfo", map[string]any{"threadID": ""}, false},
	}
	for _, tc := range cases {
		code, env := call(t, s, "k", tc.method, tc.params)
		refused := code == 400 && bytes.Contains(env["error"], []byte(`"invalid-argument"`))
		if tc.ok == refused || (tc.ok && code != 200) {
			t.Errorf("%s %v: HTTP %d %s", tc.method, tc.params, code, env["error"])
		}
	}
	// The record header wraps the document.
	_, env := call(t, s, "k", "getThread", map[string]any{"thread": id})
	var res struct {
		Thread struct {
			ID, CreatorUserID string
			Data              map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(env["result"], &res); err != nil || res.Thread.ID != id || res.Thread.CreatorUserID != DefaultUserID ||
		res.Thread.Data["v"] == nil || res.Thread.Data["messages"] != nil {
		t.Fatalf("getThread: %s", env["result"])
	}
}
