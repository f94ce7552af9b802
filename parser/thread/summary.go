package thread

import (
	"math/bits"
	"sync/atomic"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/parser/gitremote"
	"github.com/amp-exporter/amp-exporter/parser/shellcmd"
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
// (docs/formats/amp-threads.md §1.8 says what they mean per provider).
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
	// Created is the thread's created, epoch ms (0 when absent): no item
	// of its own can be older (the backfill bounds item times by it).
	Created int64 `json:"-"`
	// Repository is the thread's git remote as host/path, "" when it has
	// none (docs/repositories.md); RepositoryReason says why a remote that
	// is present gives none.
	Repository       string           `json:"repository,omitempty"`
	RepositoryReason gitremote.Reason `json:"repository_reason,omitempty"`

	// Items are the thread's counted things, one by one, with their
	// identities: the totals below are their sum (without the Copied
	// ones). The collector counts from Items. They live in the storage of
	// the parser that read the thread, until its next parse (ItemsValid).
	Items  []Item `json:"-"`
	gen    uint64
	parses *atomic.Uint64

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
	// folded into FoldedModel (the per-file budget), for
	// amp_exporter_label_values_folded_total.
	FoldedModels []uint64 `json:"-"`
	FoldedTools  []uint64 `json:"-"`
}

// ItemsValid reports whether Items still hold this summary's items: false
// once the parser that read the thread has parsed another, which reuses
// their storage. The totals stay valid.
func (s *Summary) ItemsValid() bool {
	return s.parses == nil || s.parses.Load() == s.gen
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

// Shell command outcomes (amp_shell_commands_total).
const (
	ShellSuccess = "success"
	ShellFailure = "failure"
	ShellStopped = "stopped"
)

// ShellOutcomes are the outcomes a shell command can have, in order.
var ShellOutcomes = []string{ShellSuccess, ShellFailure, ShellStopped}

// Push outcomes (amp_pushes_total).
const (
	PushSuccess = "success"
	PushFailure = "failure"
)

// PushOutcomes are the outcomes a push can have, in order.
var PushOutcomes = []string{PushSuccess, PushFailure}

// ShellOutcome is how a shell command's run ended, "" when it never ran
// (rejected). A done run gives its exitCode: 0 success, −1 (the CLI's
// "stopped or unknown") or none stopped, any other failure. A cancelled
// run was stopped; one that ended in error failed.
func ShellOutcome(status string, exit int64, hasExit bool) string {
	switch status {
	case StatusDone:
		switch {
		case !hasExit || exit == -1:
			return ShellStopped
		case exit == 0:
			return ShellSuccess
		}
		return ShellFailure
	case StatusCancelled:
		return ShellStopped
	case StatusError:
		return ShellFailure
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

// rawModel is the model a message names, "" when it names none.
func (m *Message) rawModel() string {
	if m.Usage != nil && m.Usage.Model != "" {
		return m.Usage.Model
	}
	return m.Model
}

func orUnknown(model string) string {
	if model == "" {
		return UnknownModel
	}
	return model
}

// Summarize computes a thread's contribution: the list of its items
// (Summary.Items), and their totals.
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
// parent, where ccusage counts them in both files; so are the ledger events
// that bill them or predate the fork.
//
// When t comes from a Parser, Summary.Items lives in the parser's storage
// and is valid until its next Parse, like t itself.
func Summarize(t *Thread) *Summary {
	s := SummarizeItems(t)
	s.total()
	return s
}

// SummarizeItems is Summarize without the totals (the message counts,
// Tokens, Credits, Finished, ToolCalls, ContextUtil, ExchangeSeconds):
// the items alone, which is all a store counts, and what every source
// that counts (the watcher, the Amp server's sync, the backfill, the
// report) gives it. Adding the items up per model as well was a twentieth
// of a report's CPU; the totals serve the tests that read one thread's
// sums.
func SummarizeItems(t *Thread) *Summary {
	s := &Summary{
		ID:               t.ID,
		Version:          t.Version,
		AgentMode:        t.AgentMode,
		Repository:       t.Repository,
		RepositoryReason: t.RepositoryReason,
		LastActivity:     t.Created,
		Created:          t.Created,
		FoldedModels:     t.FoldedModels,
		FoldedTools:      t.FoldedTools,
	}
	// The fork copied messages[0..ForkPoint]: positions in the file's
	// whole messages[], which Index keeps.
	first := 0
	for first < len(t.Messages) && t.Messages[first].Index <= t.ForkPoint {
		first++
	}
	s.CopiedMessages = first

	var items []Item
	if t.items != nil {
		items = (*t.items)[:0]
	}
	// Sized up front: growing these maps was a tenth of the summary's cost.
	uses := 0
	for i := range t.Messages {
		uses += len(t.Messages[i].ToolUses)
	}
	if need := len(t.Messages) + uses + len(t.Ledger); cap(items) < need {
		items = make([]Item, 0, need+need/4)
	}
	// Where each tool_use is: its message's index << 32 | its rank.
	toolUses := make(map[uint64]uint64, uses)
	for i := range t.Messages {
		m := &t.Messages[i]
		for j, tu := range m.ToolUses {
			toolUses[tu.IDHash] = uint64(i)<<32 | uint64(uint32(j))
		}
		s.LastActivity = max(s.LastActivity, m.SentAt, m.CreatedAt)
		if m.Usage != nil {
			s.LastActivity = max(s.LastActivity, m.Usage.Timestamp)
		}
	}
	for _, e := range t.Ledger {
		s.LastActivity = max(s.LastActivity, e.Timestamp)
	}

	byLedger := len(t.Ledger) > 0
	s.Billing = BillingMessages
	if byLedger {
		s.Billing = BillingLedger
	}
	seenResults := make(map[uint64]bool, uses)
	at := t.Created // the nearest earlier time (Item.At)
	dup := duplicates(t.Messages)
	for i := range t.Messages {
		m := &t.Messages[i]
		if dup != nil && dup[i] {
			continue
		}
		copied := i < first
		// The server's createdAt first: usage.timestamp is the client's
		// (the CLI never reads it), sentAt only on prompts.
		switch {
		case m.CreatedAt > 0:
			at = m.CreatedAt
		case m.Usage != nil && m.Usage.Timestamp > 0:
			at = m.Usage.Timestamp
		case m.SentAt > 0:
			at = m.SentAt
		}
		it := Item{Key: messageKey(m), Alias: messageAlias(m), AliasFromZero: messageAliasFromZero(m), Copied: copied, Role: m.Role, Prompt: m.Prompt, At: at}
		if m.Role == RoleAssistant {
			it.Model = m.rawModel()
			it.StopReason = FinishReason(m)
			it.NoUsage = m.Usage == nil
			if u := m.Usage; u != nil {
				if !byLedger {
					it.Tokens, it.Over = requestTokens(u.Input, u.Output, u.CacheRead, u.CacheCreation, u.TotalTokens)
					it.Credits, it.HasCredits = u.Credits, u.HasCredits
					it.Speed = u.Speed
				}
				if it.StopReason != "" && u.MaxInput > 0 {
					total := u.TotalInput
					if total == 0 {
						total = u.Input + u.CacheRead + u.CacheCreation
					}
					it.Ratio, it.HasRatio = float64(total)/float64(u.MaxInput), true
				}
			}
		}
		items = append(items, it)
		for j, r := range m.ToolResults {
			status := TerminalStatus(r.Status)
			if status == "" || seenResults[r.ToolUseIDHash] {
				continue
			}
			seenResults[r.ToolUseIDHash] = true
			it := Item{Copied: copied, Tool: toolname.Unknown, Status: status, At: at}
			if at, ok := toolUses[r.ToolUseIDHash]; ok {
				um := &t.Messages[at>>32]
				tu := &um.ToolUses[uint32(at)]
				it.Tool = toolname.Normalize(tu.Name)
				it.Added, it.Removed, it.Lines, it.Uncounted = tu.Added, tu.Removed, tu.Lines, tu.Uncounted
				if tu.Lines {
					// The lines are the model's work: by model too.
					it.Model = um.rawModel()
				}
				if it.Tool == toolname.Bash && status == StatusDone && tu.Intent.Any() {
					it.shellResult(tu.Intent, &r)
					if it.Commits > 0 || it.PullRequests > 0 {
						// As are its commits and pull requests.
						it.Model = um.rawModel()
					}
				}
			}
			if it.Tool == toolname.Bash {
				it.Shell = ShellOutcome(status, r.ExitCode, r.HasExit)
			}
			it.Key, it.Alias = toolKey(m, j, r.ToolUseIDHash)
			it.AliasFromZero = toolAliasFromZero(m, j)
			items = append(items, it)
		}
	}
	if byLedger {
		items = ledgerItems(t, first, items)
	}
	items = exchanges(t.Messages, dup, first, items)
	if t.items != nil {
		*t.items = items
	}
	s.Items, s.gen, s.parses = items, t.gen, t.parses
	return s
}

// duplicates marks the messages whose identity an earlier message of the
// document already has (a messageId given twice: a local file, or a server
// document whose pages overlapped): only the first counts. It returns nil
// when there are none, the usual case, found without a map while the keys
// ascend (numeric messageIds and positions do).
func duplicates(msgs []Message) []bool {
	var (
		seen map[uint64]struct{}
		dup  []bool
		last uint64
	)
	for i := range msgs {
		k := messageKey(&msgs[i])
		if seen == nil {
			if i == 0 || k > last {
				last = k
				continue
			}
			seen = make(map[uint64]struct{}, len(msgs))
			for j := range i {
				seen[messageKey(&msgs[j])] = struct{}{}
			}
		}
		if _, ok := seen[k]; ok {
			if dup == nil {
				dup = make([]bool, len(msgs))
			}
			dup[i] = true
			continue
		}
		seen[k] = struct{}{}
	}
	return dup
}

// total adds up the items that are the thread's own into the summary's
// totals.
func (s *Summary) total() {
	s.Tokens, s.Credits = map[string]Tokens{}, map[string]float64{}
	s.Finished, s.ToolCalls = map[string]map[string]int{}, map[string]map[string]int{}
	ratios, exchanges := 0, 0
	for i := range s.Items {
		it := &s.Items[i]
		switch {
		case it.Copied:
		case it.HasRatio:
			ratios++
		case it.Kind() == ItemExchange:
			exchanges++
		}
	}
	if ratios > 0 {
		s.ContextUtil = make([]Ratio, 0, ratios)
	}
	if exchanges > 0 {
		s.ExchangeSeconds = make([]float64, 0, exchanges)
	}
	for i := range s.Items {
		it := &s.Items[i]
		if it.Copied {
			continue
		}
		switch k := it.Kind(); {
		case it.IsMessage() && it.Role == RoleUser:
			s.UserMessages++
			if it.Prompt {
				s.Prompts++
			}
		case it.IsMessage() && it.Role == RoleAssistant:
			s.AssistantMessages++
			model := orUnknown(it.Model)
			s.addTokens(model, it)
			if it.StopReason != "" {
				inc(s.Finished, model, it.StopReason)
			}
			if it.HasRatio {
				s.ContextUtil = append(s.ContextUtil, Ratio{Model: model, Ratio: it.Ratio})
			}
		case it.IsLedger():
			s.addTokens(orUnknown(it.Model), it)
		case it.IsTool():
			inc(s.ToolCalls, it.Tool, it.Status)
		case k == ItemExchange:
			s.ExchangeSeconds = append(s.ExchangeSeconds, it.Seconds)
		}
	}
}

// ledgerItems appends the items of a thread's ledger events. In a fork, an
// event that bills a copied message, or that names none and predates the
// fork, was copied with them: the parent's.
func ledgerItems(t *Thread, first int, items []Item) []Item {
	type cache struct{ read, creation int64 }
	byID := make(map[int64]cache)
	at := t.Created // the nearest earlier ledger time (Item.At)
	copiedID := make(map[int64]bool)
	for i := range t.Messages {
		m := &t.Messages[i]
		if !m.HasID {
			continue
		}
		if i < first {
			copiedID[m.ID] = true
		}
		if m.Role != RoleAssistant {
			continue
		}
		var c cache
		if m.Usage != nil {
			c = cache{m.Usage.CacheRead, m.Usage.CacheCreation}
		}
		byID[m.ID] = c
	}
	var seen map[uint64]bool
	for j := range t.Ledger {
		e := &t.Ledger[j]
		key := ItemKey(ItemLedgerAt, uint64(j))
		if e.IDHash != 0 {
			key = ItemKey(ItemLedger, e.IDHash)
			// An event listed twice is billed once.
			if seen == nil {
				seen = make(map[uint64]bool, len(t.Ledger))
			}
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		if e.Timestamp > 0 {
			at = e.Timestamp
		}
		it := Item{Key: key, Model: e.Model, At: at}
		if t.ForkPoint >= 0 {
			if e.HasTo {
				it.Copied = copiedID[e.ToMessageID]
			} else {
				it.Copied = e.Timestamp > 0 && e.Timestamp < t.Created
			}
		}
		var c cache
		if e.HasTo {
			c = byID[e.ToMessageID]
		}
		it.Tokens, it.Over = requestTokens(e.Input, e.Output, c.read, c.creation, e.Total)
		it.Credits, it.HasCredits = e.Credits, e.HasCredits
		items = append(items, it)
	}
	return items
}

// requestTokens returns one record's tokens and their part beyond the
// long-context threshold. A record that gives only a total (some ledger
// events) has the tokens its parts do not explain counted as output, as
// ccusage does when pricing them.
func requestTokens(input, output, cacheRead, cacheCreation, total int64) (t, over Tokens) {
	if known := sat.Add(sat.Add(input, output), sat.Add(cacheRead, cacheCreation)); total > known {
		output = sat.Add(output, total-known)
	}
	o := func(n int64) int64 { return max(n-LongContextThreshold, 0) }
	return Tokens{input, output, cacheRead, cacheCreation}, Tokens{o(input), o(output), o(cacheRead), o(cacheCreation)}
}

// addTokens adds an item's tokens and credits under model.
func (s *Summary) addTokens(model string, it *Item) {
	if it.HasCredits {
		s.Credits[model] += it.Credits
	}
	if it.Tokens == (Tokens{}) {
		return
	}
	s.Tokens[model] = s.Tokens[model].plus(it.Tokens)
	if it.Over != (Tokens{}) {
		if s.TokensOverThreshold == nil {
			s.TokensOverThreshold = map[string]Tokens{}
		}
		s.TokensOverThreshold[model] = s.TokensOverThreshold[model].plus(it.Over)
	}
}

// plus adds two token counts without wrapping.
func (t Tokens) plus(u Tokens) Tokens {
	return Tokens{sat.Add(t.Input, u.Input), sat.Add(t.Output, u.Output), sat.Add(t.CacheRead, u.CacheRead), sat.Add(t.CacheCreation, u.CacheCreation)}
}

func inc(m map[string]map[string]int, a, b string) {
	inner := m[a]
	if inner == nil {
		inner = map[string]int{}
		m[a] = inner
	}
	inner[b]++
}

// exchanges appends an item for every finished exchange: from a prompt's
// sentAt to the last assistant timestamp before the next prompt, identified
// by its prompt. An exchange is finished once the next prompt arrives, or
// when its last assistant message is finished and did not stop to call a
// tool; until then its end may still move, so it is not reported. The
// exchanges of prompts a fork copied (before first) are the parent's.
func exchanges(msgs []Message, dup []bool, first int, items []Item) []Item {
	var (
		open      bool
		at        int
		start     int64
		end       int64
		lastState string
	)
	for i := 0; i <= len(msgs); i++ {
		final := i == len(msgs)
		var m *Message
		if !final {
			if dup != nil && dup[i] {
				continue
			}
			m = &msgs[i]
			if m.Role == RoleAssistant && open {
				if m.Usage != nil && m.Usage.Timestamp > end {
					end = m.Usage.Timestamp
				}
				lastState = FinishReason(m)
				continue
			}
			if m.Role != RoleUser || !m.Prompt {
				continue
			}
		}
		// A prompt, or the end: the open exchange is over.
		if open && end > 0 && end >= start && !(final && (lastState == "" || lastState == "tool_use")) {
			it := Item{
				// The prompt's key, its kind rotated into the low bits.
				Key:     ItemKey(ItemExchange, bits.RotateLeft64(messageKey(&msgs[at]), 4)),
				Copied:  at < first,
				Seconds: float64(end-start) / 1000,
				At:      end,
			}
			if a := messageAlias(&msgs[at]); a != 0 {
				it.Alias = ItemKey(ItemExchange, bits.RotateLeft64(a, 4))
			}
			if a := messageAliasFromZero(&msgs[at]); a != 0 {
				it.AliasFromZero = ItemKey(ItemExchange, bits.RotateLeft64(a, 4))
			}
			items = append(items, it)
		}
		if !final {
			open, at, start, end, lastState = m.SentAt > 0, i, m.SentAt, 0, ""
		}
	}
	return items
}

// shellResult sets what a shell command whose run is done did, from what
// its command can do and what its output proves. A result without an
// exit code is read as a failed call (shellcmd.Recognize's rule): its
// commits and pull requests are not counted.
func (it *Item) shellResult(in shellcmd.Intent, r *ToolResult) {
	exit := r.ExitCode
	if !r.HasExit {
		exit = -1
	}
	res := in.Result(r.Proof, exit)
	it.Commits, it.PullRequests = int32(res.Commits), int32(res.PullRequests)
	it.Pushes, it.FailedPushes = int32(res.Pushes), int32(res.FailedPushes)
}
