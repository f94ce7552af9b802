package streamjson

import (
	"strings"
	"testing"
)

func TestSessionID(t *testing.T) {
	for _, tc := range []struct {
		line   string
		want   string
		result bool
	}{
		{`{"type":"user","message":{"role":"user","content":"hi"},"session_id":"T-1"}`, "T-1", false},
		{`{"type":"result","subtype":"success","session_id":"T-2","duration_ms":5}`, "T-2", true},
		{`{"type":"user","message":{"role":"user","content":"hi"}}`, "", false},
		{`{"type":"user","session_id":"` + strings.Repeat("x", maxSessionID+1) + `"}`, "", false},
	} {
		m, ok, err := NewParser().ParseLine([]byte(tc.line))
		if err != nil || !ok {
			t.Fatalf("%s: %v", tc.line, err)
		}
		var r Run
		inc := r.Apply(m)
		if m.SessionID != tc.want || inc.SessionID != tc.want || inc.Result != tc.result {
			t.Errorf("%.60s: session %q/%q result %v", tc.line, m.SessionID, inc.SessionID, inc.Result)
		}
	}
}
