package thread

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/amp-exporter/amp-exporter/parser/gitremote"
	"github.com/amp-exporter/amp-exporter/parser/linecount"
	"github.com/amp-exporter/amp-exporter/parser/toolname"
)

// referenceParse decodes a thread with encoding/json, following the spec
// (docs/formats/amp-threads.md §1) rather than the fast parser's code. It is slow and obviously
// correct, and exists only to check the fast parser (in tests and under the
// fuzzer). It returns a nil thread for a document that is not a thread, and
// an error for a document encoding/json refuses or that the comparison
// cannot judge (duplicate keys, invalid UTF-8).
func referenceParse(data []byte) (*Thread, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("invalid UTF-8: encoding/json rewrites it, the fast parser does not")
	}
	if hasDuplicateKeys(data) {
		// Both keep the last value of a key given twice, but the fast
		// parser's per-file label budgets still see every value read.
		return nil, errors.New("duplicate keys: not compared")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data")
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, nil
	}
	if _, ok := top["v"]; !ok {
		return nil, nil
	}
	t := &Thread{ForkPoint: -1}
	t.Version, _ = refInt(top["v"])
	t.ID, _ = top["id"].(string)
	t.Created, _ = refInt(top["created"])
	t.AgentMode, _ = top["agentMode"].(string)
	if v, ok := refInt(top["forkPointIndex"]); ok && v >= 0 && v < 1<<31 {
		t.ForkPoint = int(v)
	}
	if msgs, ok := top["messages"].([]any); ok {
		// docs/formats/amp-threads.md §4.7: the fork point is a position in this array, so
		// every entry keeps the position it has here.
		for pos, raw := range msgs {
			obj, ok := raw.(map[string]any)
			if !ok {
				continue
			}
			if m := refMessage(obj); m.Role != RoleOther {
				m.Index = pos
				t.Messages = append(t.Messages, m)
			}
		}
	}
	// ToolResult.ExitCode is kept only on the results of shell commands.
	shell := map[uint64]bool{}
	for _, m := range t.Messages {
		for _, u := range m.ToolUses {
			shell[u.IDHash] = toolname.Normalize(u.Name) == toolname.Bash
		}
	}
	for i := range t.Messages {
		for j := range t.Messages[i].ToolResults {
			if r := &t.Messages[i].ToolResults[j]; !shell[r.ToolUseIDHash] {
				r.ExitCode, r.HasExit = 0, false
			}
		}
	}
	if ledger, ok := top["usageLedger"].(map[string]any); ok {
		if events, ok := ledger["events"].([]any); ok {
			for _, raw := range events {
				if obj, ok := raw.(map[string]any); ok {
					t.Ledger = append(t.Ledger, refEvent(obj))
				}
			}
		}
	}
	t.Repository, t.RepositoryReason = refRepository(top)
	if t.ForkPoint < 0 {
		if rels, ok := top["relationships"].([]any); ok {
			for _, raw := range rels {
				obj, ok := raw.(map[string]any)
				if !ok {
					continue
				}
				typ, _ := obj["type"].(string)
				role, _ := obj["role"].(string)
				idx, ok := refInt(obj["messageIndex"])
				if !ok {
					idx = -1
				}
				if typ == "fork" && role == "child" && idx >= 0 && idx < 1<<31 {
					t.ForkPoint = int(idx)
				}
			}
		}
	}
	return t, nil
}

// referenceOwnMessages counts a thread's own user messages, assistant
// messages and prompts straight from the document, by the spec's rule
// (docs/formats/amp-threads.md §1.2, §1.4, §4.7): forkPointIndex, else the messageIndex of a
// fork relationship in which this thread is the child, is the position in
// messages[] of the last entry a fork copied from its parent; entries after
// it are the thread's own; only the user and assistant roles count; a user
// message is a prompt when a block of its content is not a tool_result.
// ok is false for a document the reference cannot judge.
func referenceOwnMessages(data []byte) (user, assistant, prompts int, ok bool) {
	if !utf8.Valid(data) || hasDuplicateKeys(data) {
		return 0, 0, 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var top map[string]any
	if dec.Decode(&top) != nil || top == nil {
		return 0, 0, 0, false
	}
	lastCopied := int64(-1)
	if rels, ok := top["relationships"].([]any); ok {
		for _, raw := range rels {
			rel, _ := raw.(map[string]any)
			if i, ok := refInt(rel["messageIndex"]); ok && rel["type"] == "fork" && rel["role"] == "child" && i >= 0 && i < 1<<31 {
				lastCopied = i
			}
		}
	}
	if i, ok := refInt(top["forkPointIndex"]); ok && i >= 0 && i < 1<<31 {
		lastCopied = i
	}
	msgs, _ := top["messages"].([]any)
	for pos := lastCopied + 1; pos >= 0 && pos < int64(len(msgs)); pos++ {
		m, _ := msgs[pos].(map[string]any)
		switch m["role"] {
		case "assistant":
			assistant++
		case "user":
			user++
			prompt := false
			switch content := m["content"].(type) {
			case string:
				prompt = true
			case []any:
				for _, b := range content {
					if blk, _ := b.(map[string]any); blk == nil || blk["type"] != "tool_result" {
						prompt = true
					}
				}
			}
			if prompt {
				prompts++
			}
		}
	}
	return user, assistant, prompts, true
}

func refMessage(obj map[string]any) Message {
	var m Message
	switch obj["role"] {
	case "user":
		m.Role = RoleUser
	case "assistant":
		m.Role = RoleAssistant
	}
	switch id := obj["messageId"].(type) {
	case json.Number:
		m.ID, m.HasID = refInt(id)
	case string:
		m.IDHash = HashID(id)
		m.IDIsProtocol = len(id) > 2 && id[:2] == "M-"
	}
	if id, ok := obj["protocolMessageID"].(string); ok && len(id) > 2 && id[:2] == "M-" {
		m.ProtoHash = HashID(id)
	}
	nonToolResult := false
	switch content := obj["content"].(type) {
	case string:
		nonToolResult = true
	case []any:
		for _, raw := range content {
			b, ok := raw.(map[string]any)
			if !ok {
				nonToolResult = true
				continue
			}
			typ, _ := b["type"].(string)
			status := ""
			var exit int64
			hasExit := false
			if run, ok := b["run"].(map[string]any); ok {
				status, _ = run["status"].(string)
				if res, ok := run["result"].(map[string]any); ok {
					if _, there := res["exitCode"]; there {
						exit, hasExit = refInt(res["exitCode"])
					}
				}
			}
			switch typ {
			case "tool_result":
				if id, ok := b["toolUseID"].(string); ok && status != "" {
					m.ToolResults = append(m.ToolResults, ToolResult{ToolUseIDHash: HashID(id), Status: status, ExitCode: exit, HasExit: hasExit})
				}
				continue
			case "tool_use":
				if id, ok := b["id"].(string); ok {
					name, _ := b["name"].(string)
					if n, _ := b["normalizedName"].(string); n != "" {
						name = n
					}
					tu := ToolUse{IDHash: HashID(id), Name: name}
					raw, _ := b["name"].(string)
					input, _ := b["input"].(map[string]any)
					tu.Added, tu.Removed, tu.Lines = refLines(raw, input)
					m.ToolUses = append(m.ToolUses, tu)
				}
			}
			nonToolResult = true
		}
	}
	if meta, ok := obj["meta"].(map[string]any); ok {
		m.SentAt, _ = refInt(meta["sentAt"])
	}
	if state, ok := obj["state"].(map[string]any); ok {
		m.State, _ = state["type"].(string)
		m.StopReason, _ = state["stopReason"].(string)
	}
	if u, ok := obj["usage"].(map[string]any); ok {
		m.Usage = refUsage(u)
	}
	m.Model, _ = obj["model"].(string)
	m.Prompt = m.Role == RoleUser && nonToolResult
	if m.Role != RoleUser {
		m.ToolResults, m.SentAt = nil, 0
	}
	if m.Role != RoleAssistant {
		m.ToolUses, m.Usage, m.State, m.StopReason = nil, nil, "", ""
	}
	return m
}

func refUsage(u map[string]any) *Usage {
	out := &Usage{}
	count := func(key string) int64 {
		v, ok := refInt(u[key])
		if !ok {
			return 0
		}
		if v < 0 {
			out.HasTokenNegative = true
			return 0
		}
		return v
	}
	out.Model, _ = u["model"].(string)
	out.Input = count("inputTokens")
	out.Output = count("outputTokens")
	out.CacheRead = count("cacheReadInputTokens")
	out.CacheCreation = count("cacheCreationInputTokens")
	out.TotalInput = count("totalInputTokens")
	out.MaxInput = count("maxInputTokens")
	out.TotalTokens = count("totalTokens")
	out.Credits, out.HasCredits = refFloat(u["credits"])
	if ts, ok := u["timestamp"].(string); ok {
		out.Timestamp = parseTimestamp([]byte(ts))
	}
	return out
}

func refEvent(obj map[string]any) LedgerEvent {
	var e LedgerEvent
	if id, ok := obj["id"].(string); ok {
		e.IDHash = HashID(id)
	}
	e.Model, _ = obj["model"].(string)
	e.Credits, e.HasCredits = refFloat(obj["credits"])
	if ts, ok := obj["timestamp"].(string); ok {
		e.Timestamp = parseTimestamp([]byte(ts))
	}
	if n, ok := obj["toMessageId"].(json.Number); ok {
		e.ToMessageID, e.HasTo = refInt(n)
	}
	if tok, ok := obj["tokens"].(map[string]any); ok {
		count := func(key string) int64 {
			v, ok := refInt(tok[key])
			if !ok || v < 0 {
				return 0
			}
			return v
		}
		e.Input, e.Output, e.Total = count("input"), count("output"), count("total")
	}
	return e
}

func refInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != f || f > 9.2e18 || f < -9.2e18 {
		return 0, false
	}
	return int64(f), true
}

func refFloat(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

// hasDuplicateKeys reports whether any object in a valid document repeats a
// key (or the document is invalid).
func hasDuplicateKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		keys     map[string]bool
		isObject bool
		wantKey  bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return err.Error() != "EOF"
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				if top != nil && top.isObject {
					top.wantKey = true
				}
				stack = append(stack, &frame{keys: map[string]bool{}, isObject: true, wantKey: true})
			case '[':
				if top != nil && top.isObject {
					top.wantKey = true
				}
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.isObject && top.wantKey {
				if top.keys[v] {
					return true
				}
				top.keys[v] = true
				top.wantKey = false
				continue
			}
			if top != nil && top.isObject {
				top.wantKey = true
			}
		default:
			if top != nil && top.isObject {
				top.wantKey = true
			}
		}
	}
}

// refLines counts the lines an edit tool's input changes, as
// docs/counting.md says: edit_file diffs old_str and new_str, create_file
// counts content, apply_patch counts patchText; each string is read up to
// its first MiB.
func refLines(name string, input map[string]any) (added, removed int64, ok bool) {
	str := func(k string) (string, bool) {
		s, ok := input[k].(string)
		if len(s) > maxEditText {
			s = s[:maxEditText]
		}
		return s, ok
	}
	switch name {
	case "edit_file":
		o, ok1 := str("old_str")
		n, ok2 := str("new_str")
		if !ok1 || !ok2 {
			return 0, 0, false
		}
		added, removed, _ = linecount.Diff(o, n)
		return added, removed, true
	case "create_file":
		c, ok := str("content")
		return linecount.Lines(c), 0, ok
	case "apply_patch":
		p, ok := str("patchText")
		if !ok {
			return 0, 0, false
		}
		added, removed = linecount.Patch(p)
		return added, removed, true
	}
	return 0, 0, false
}

// refRepository reads env.initial.trees[0].repository.url
// (docs/repositories.md): a string is normalised, null or absent is no
// remote, any other value a remote that cannot be read.
func refRepository(top map[string]any) (string, gitremote.Reason) {
	env, _ := top["env"].(map[string]any)
	initial, _ := env["initial"].(map[string]any)
	trees, _ := initial["trees"].([]any)
	if len(trees) == 0 {
		return "", gitremote.ReasonNone
	}
	tree, _ := trees[0].(map[string]any)
	repo, _ := tree["repository"].(map[string]any)
	switch url := repo["url"].(type) {
	case nil:
		return "", gitremote.ReasonNone
	case string:
		return gitremote.Normalize(url)
	default:
		return "", gitremote.ReasonInvalid
	}
}
