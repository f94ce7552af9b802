// Package threadtest builds thread summaries for tests, item by item, so
// that the store counts them by its one rule (each item's identity pinned
// to its labels) as it counts a parsed thread.
package threadtest

import (
	"slices"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// Thread describes a thread by what it holds. Its messages get stable
// identities: the same Thread (or one with more of each) describes the same
// thread rewritten, so its items count once.
type Thread struct {
	ID        string
	AgentMode string
	// Users are user messages; the first Prompts of them are prompts.
	Users, Prompts int
	// Tokens are, per model, the usage of one finished assistant message
	// (stop reason end_turn) naming that model.
	Tokens map[string]thread.Tokens
	// Assistants are assistant messages besides those of Tokens, finished
	// without usage.
	Assistants int
}

// Summary is the summary of t.
func Summary(t Thread) *thread.Summary {
	var items []thread.Item
	id := uint64(0)
	next := func() uint64 {
		id++
		return thread.ItemKey(thread.ItemMessage, id)
	}
	for i := range t.Users {
		items = append(items, thread.Item{Key: next(), Role: thread.RoleUser, Prompt: i < t.Prompts})
	}
	models := make([]string, 0, len(t.Tokens))
	for m := range t.Tokens {
		models = append(models, m)
	}
	slices.Sort(models)
	// Assistant messages are numbered from 1<<20, so that adding users
	// keeps their identities.
	id = 1 << 20
	for _, m := range models {
		items = append(items, thread.Item{Key: next(), Role: thread.RoleAssistant, Model: m, StopReason: "end_turn", Tokens: t.Tokens[m]})
	}
	id = 1 << 30
	for range t.Assistants {
		items = append(items, thread.Item{Key: next(), Role: thread.RoleAssistant, StopReason: "end_turn"})
	}
	return thread.FromItems(t.ID, t.AgentMode, items)
}
