package thread

import (
	"math"

	"github.com/amp-exporter/amp-exporter/parser/toolname"
)

// LongContextThreshold is where long-context prices start
// (pricing.LongContextThreshold; Anthropic's 200k tier).
const LongContextThreshold = 200_000

// UnknownModel labels usage that names no model.
const UnknownModel = "unknown"

// Billing modes: which records a thread's tokens and credits come from.
const (
	BillingLedger   = "ledger"
	BillingMessages = "messages"
)

// Tokens are a model's token counts, by type, as the files give them
// (formats §1.8 says what they mean per provider).
type Tokens struct {
	Input         int64 `json:"input"`
	Output        int64 `json:"output"`
	CacheRead     int64 `json:"cache_read"`
	CacheCreation int64 `json:"cache_creation"`
}

// Ratio is one context-window utilization observation.
type Ratio struct {
	Model string  `json:"model"`
	Ratio float64 `json:"ratio"`
}

// Summary is a thread's whole contribution to the exporter's metrics,
// computed from one snapshot of the file. The collector turns successive
// summaries of the same thread into counter increments.
type Summary struct {
	ID        string `json:"id"`
	Version   int64  `json:"v"`
	AgentMode string `json:"agent_mode"`
	Billing   string `json:"billing"`
	// CopiedMessages are messages a fork copied from its parent: the
	// parent's spending, not counted here.
	CopiedMessages int `json:"copied_messages"`
	// LastActivity is the newest timestamp in the thread, epoch ms.
	LastActivity int64 `json:"last_activity_ms"`

	UserMessages      int               `json:"user_messages"`
	AssistantMessages int               `json:"assistant_messages"`
	Prompts           int               `json:"prompts"`
	Tokens            map[string]Tokens `json:"tokens"`
	// TokensOverThreshold are, per request and token type, the tokens
	// beyond the first LongContextThreshold: models with long-context
	// prices charge them at those (the way ccusage and LiteLLM price
	// tiers).
	TokensOverThreshold map[string]Tokens         `json:"tokens_over_threshold,omitempty"`
	Credits             map[string]float64        `json:"credits"`
	Finished            map[string]map[string]int `json:"finished"`   // model → stop_reason → n
	ToolCalls           map[string]map[string]int `json:"tool_calls"` // tool → status → n
	ContextUtil         []Ratio                   `json:"context_utilization"`
	ExchangeSeconds     []float64                 `json:"exchange_seconds"`
	// FoldedModels are the hashes of the distinct model names the parser
	// folded into FoldedModel (the per-file budget), for the collector's
	// amp_exporter_label_values_folded_total.
	FoldedModels []uint64 `json:"-"`
	FoldedTools  []uint64 `json:"-"`
}

// Tool-call statuses: the terminal run states, with rejected-by-user
// shortened.
const (
	StatusDone      = "done"
	StatusError     = "error"
	StatusCancelled = "cancelled"
	StatusRejected  = "rejected"
)

// TerminalStatus maps a run status to its tool-call status, or "" for a
// state that is still moving (queued, in-progress, blocked-on-user,
// cancellation-requested, and any status this exporter does not know).
func TerminalStatus(run string) string {
	switch run {
	case "done":
		return StatusDone
	case "error":
		return StatusError
	case "cancelled":
		return StatusCancelled
	case "rejected-by-user":
		return StatusRejected
	}
	return ""
}

// FinishReason maps an assistant message's state to its stop_reason label,
// or "" while the message is still streaming. A complete message gives its
// stopReason; files that predate `state` are finished with an unknown
// reason; a state type this exporter does not know waits, like streaming.
func FinishReason(m *Message) string {
	switch m.State {
	case "complete":
		if m.StopReason == "" {
			return "unknown"
		}
		return m.StopReason
	case "cancelled":
		return "cancelled"
	case "error":
		return "error"
	case "":
		return "unknown"
	}
	return ""
}

func (m *Message) model() string {
	if m.Usage != nil && m.Usage.Model != "" {
		return m.Usage.Model
	}
	if m.Model != "" {
		return m.Model
	}
	return UnknownModel
}

// Summarize computes a thread's contribution.
//
// Billing follows the rule the peer tools (ccusage) use so that totals agree:
// a thread whose usageLedger has events is billed by its ledger — input,
// output and credits from the events, cache tokens from the assistant
// message each event's toMessageId points to — and a thread without ledger
// events by its assistant messages' usage, whatever their state (usage only
// grows while a message streams, and what was consumed was consumed).
//
// Where ccusage drops a record because it cannot place it on a calendar (no
// timestamp) or name its model, the exporter counts it under model
// "unknown" or without a date: tokens spent stay spent. Forks differ too:
// the messages a fork copied from its parent are counted once, in the
// parent, where ccusage counts them in both files.
func Summarize(t *Thread) *Summary {
	s := &Summary{
		ID:           t.ID,
		Version:      t.Version,
		AgentMode:    t.AgentMode,
		Tokens:       map[string]Tokens{},
		Credits:      map[string]float64{},
		Finished:     map[string]map[string]int{},
		ToolCalls:    map[string]map[string]int{},
		LastActivity: t.Created,
		FoldedModels: t.FoldedModels,
		FoldedTools:  t.FoldedTools,
	}
	first := t.ForkPoint + 1 // messages before first were copied by a fork
	if first > len(t.Messages) {
		first = len(t.Messages)
	}
	s.CopiedMessages = first
	counted := t.Messages[first:]

	// Sized up front: growing these maps was a tenth of the summary's cost.
	uses, requests := 0, 0
	for i := range t.Messages {
		uses += len(t.Messages[i].ToolUses)
		if i >= first && t.Messages[i].Usage != nil {
			requests++
		}
	}
	if requests > 0 {
		s.ContextUtil = make([]Ratio, 0, requests)
	}
	toolNames := make(map[uint64]string, uses)
	for i := range t.Messages {
		m := &t.Messages[i]
		for _, tu := range m.ToolUses {
			toolNames[tu.IDHash] = tu.Name
		}
		s.LastActivity = max(s.LastActivity, m.SentAt)
		if m.Usage != nil {
			s.LastActivity = max(s.LastActivity, m.Usage.Timestamp)
		}
	}
	for _, e := range t.Ledger {
		s.LastActivity = max(s.LastActivity, e.Timestamp)
	}

	if len(t.Ledger) > 0 {
		s.Billing = BillingLedger
		s.billLedger(t)
	} else {
		s.Billing = BillingMessages
		for i := range counted {
			m := &counted[i]
			if m.Role != RoleAssistant || m.Usage == nil {
				continue
			}
			u := m.Usage
			s.addTokens(m.model(), u.Input, u.Output, u.CacheRead, u.CacheCreation, u.TotalTokens)
			if u.HasCredits {
				s.Credits[m.model()] += u.Credits
			}
		}
	}

	seenResults := make(map[uint64]bool, uses)
	for i := range counted {
		m := &counted[i]
		switch m.Role {
		case RoleUser:
			s.UserMessages++
			if m.Prompt {
				s.Prompts++
			}
			for _, r := range m.ToolResults {
				status := TerminalStatus(r.Status)
				if status == "" || seenResults[r.ToolUseIDHash] {
					continue
				}
				seenResults[r.ToolUseIDHash] = true
				name := toolname.Unknown
				if n, ok := toolNames[r.ToolUseIDHash]; ok {
					name = toolname.Normalize(n)
				}
				inc(s.ToolCalls, name, status)
			}
		case RoleAssistant:
			s.AssistantMessages++
			reason := FinishReason(m)
			if reason == "" {
				continue
			}
			inc(s.Finished, m.model(), reason)
			if u := m.Usage; u != nil && u.MaxInput > 0 {
				total := u.TotalInput
				if total == 0 {
					total = u.Input + u.CacheRead + u.CacheCreation
				}
				s.ContextUtil = append(s.ContextUtil, Ratio{Model: m.model(), Ratio: float64(total) / float64(u.MaxInput)})
			}
		}
	}
	if len(s.ContextUtil) == 0 {
		s.ContextUtil = nil // as before it was sized up front
	}
	s.ExchangeSeconds = exchanges(counted)
	return s
}

func (s *Summary) billLedger(t *Thread) {
	type cache struct{ read, creation int64 }
	byID := make(map[int64]cache)
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.Role != RoleAssistant || !m.HasID {
			continue
		}
		var c cache
		if m.Usage != nil {
			c = cache{m.Usage.CacheRead, m.Usage.CacheCreation}
		}
		byID[m.ID] = c
	}
	for _, e := range t.Ledger {
		model := e.Model
		if model == "" {
			model = UnknownModel
		}
		var c cache
		if e.HasTo {
			c = byID[e.ToMessageID]
		}
		s.addTokens(model, e.Input, e.Output, c.read, c.creation, e.Total)
		if e.HasCredits {
			s.Credits[model] += e.Credits
		}
	}
}

// addTokens adds one record's tokens. A record that gives only a total
// (some ledger events) has the tokens its parts do not explain counted as
// output, as ccusage does when pricing them.
func (s *Summary) addTokens(model string, input, output, cacheRead, cacheCreation, total int64) {
	if known := satAdd(satAdd(input, output), satAdd(cacheRead, cacheCreation)); total > known {
		output = satAdd(output, total-known)
	}
	if input == 0 && output == 0 && cacheRead == 0 && cacheCreation == 0 {
		return
	}
	t := s.Tokens[model]
	t.Input = satAdd(t.Input, input)
	t.Output = satAdd(t.Output, output)
	t.CacheRead = satAdd(t.CacheRead, cacheRead)
	t.CacheCreation = satAdd(t.CacheCreation, cacheCreation)
	s.Tokens[model] = t
	over := func(n int64) int64 { return max(n-LongContextThreshold, 0) }
	if o := (Tokens{over(input), over(output), over(cacheRead), over(cacheCreation)}); o != (Tokens{}) {
		if s.TokensOverThreshold == nil {
			s.TokensOverThreshold = map[string]Tokens{}
		}
		t := s.TokensOverThreshold[model]
		t.Input = satAdd(t.Input, o.Input)
		t.Output = satAdd(t.Output, o.Output)
		t.CacheRead = satAdd(t.CacheRead, o.CacheRead)
		t.CacheCreation = satAdd(t.CacheCreation, o.CacheCreation)
		s.TokensOverThreshold[model] = t
	}
}

// satAdd adds two non-negative counts, stopping at the largest int64 rather
// than wrapping: a hostile file must not turn a counter negative.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func inc(m map[string]map[string]int, a, b string) {
	inner := m[a]
	if inner == nil {
		inner = map[string]int{}
		m[a] = inner
	}
	inner[b]++
}

// exchanges returns the duration of every finished exchange: from a prompt's
// sentAt to the last assistant timestamp before the next prompt. An exchange
// is finished once the next prompt arrives, or when its last assistant
// message is finished and did not stop to call a tool; until then its end
// may still move, so it is not reported.
func exchanges(msgs []Message) []float64 {
	var out []float64
	var (
		open      bool
		start     int64
		end       int64
		lastState string
	)
	flush := func(final bool) {
		if !open || end <= 0 || end < start {
			return
		}
		if final && (lastState == "" || lastState == "tool_use") {
			return
		}
		out = append(out, float64(end-start)/1000)
	}
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.Role == RoleUser && m.Prompt:
			flush(false)
			open, start, end, lastState = m.SentAt > 0, m.SentAt, 0, ""
		case m.Role == RoleAssistant && open:
			if m.Usage != nil && m.Usage.Timestamp > end {
				end = m.Usage.Timestamp
			}
			lastState = FinishReason(m)
		}
	}
	flush(true)
	return out
}
