package thread

import (
	"os"
	"testing"
)

func summarizeFile(t *testing.T, path string) *Summary {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return summarizeDoc(t, string(data))
}

// Issue 17, item 1: a document with two "messages" keys (the server's
// thread.data with its own messages, and the assembled ones after it)
// counts the last one only, as JSON.parse does; the same for every key the
// parser collects from (usageLedger, a message's content).
func TestDuplicateKeysTheLastWins(t *testing.T) {
	s := summarizeFile(t, "testdata/identity/two-messages-keys.json")
	if s.UserMessages != 2 || s.AssistantMessages != 2 || s.Prompts != 1 {
		t.Errorf("messages: user %d, assistant %d, prompts %d; want 2, 2, 1", s.UserMessages, s.AssistantMessages, s.Prompts)
	}
	if s.Billing != BillingMessages {
		t.Errorf("billing %q: the last usageLedger has no events", s.Billing)
	}
	want := Tokens{Input: 15, Output: 100, CacheRead: 7700, CacheCreation: 950}
	if got := s.Tokens["claude-opus-4-6"]; got != want {
		t.Errorf("tokens %+v, want %+v", got, want)
	}
	if got := s.ToolCalls["Bash"]["done"]; got != 1 || len(s.ToolCalls) != 1 {
		t.Errorf("tool calls %v, want one Bash done", s.ToolCalls)
	}
	if n := len(s.ExchangeSeconds); n != 1 {
		t.Errorf("%d exchanges, want 1", n)
	}
}

// Issue 17, item 8: a messageId present twice in one document (a local
// file, or a server document whose pages overlapped) counts once.
func TestDuplicateMessageIDCountsOnce(t *testing.T) {
	for _, tc := range []struct {
		file                     string
		user, assistant, prompts int
		model                    string
		tokens                   Tokens
		tools                    int
	}{
		{"duplicate-message-local.json", 2, 2, 1, "claude-opus-4-5-20251101", Tokens{16, 90, 7712, 920}, 1},
		{"duplicate-message-server.json", 1, 1, 1, "claude-opus-4-6", Tokens{10, 80, 3400, 900}, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s := summarizeFile(t, "testdata/identity/"+tc.file)
			if s.UserMessages != tc.user || s.AssistantMessages != tc.assistant || s.Prompts != tc.prompts {
				t.Errorf("messages: user %d, assistant %d, prompts %d; want %d, %d, %d",
					s.UserMessages, s.AssistantMessages, s.Prompts, tc.user, tc.assistant, tc.prompts)
			}
			if got := s.Tokens[tc.model]; got != tc.tokens {
				t.Errorf("tokens %+v, want %+v", got, tc.tokens)
			}
			n := 0
			for _, byStatus := range s.ToolCalls {
				for _, c := range byStatus {
					n += c
				}
			}
			if n != tc.tools {
				t.Errorf("%d tool calls, want %d", n, tc.tools)
			}
			if n := len(s.ContextUtil); n != tc.assistant {
				t.Errorf("%d context observations, want %d", n, tc.assistant)
			}
			keys := map[uint64]bool{}
			for _, it := range s.Items {
				if keys[it.Key] {
					t.Errorf("item key %x listed twice", it.Key)
				}
				keys[it.Key] = true
			}
		})
	}
}
