// Package thread decodes Amp thread files (T-<uuid>.json) into the records
// the exporter counts, and summarizes a thread into its contribution to every
// metric. It is pure: bytes in, values out; no clock, no file system.
//
// The format is described in docs/formats/amp-threads.md §1; the rules that make
// the numbers agree with ccusage are in Summarize.
package thread

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/amp-exporter/amp-exporter/internal/jsonscan"
	"github.com/amp-exporter/amp-exporter/parser/gitremote"
	"github.com/amp-exporter/amp-exporter/parser/linecount"
	"github.com/amp-exporter/amp-exporter/parser/shellcmd"
	"github.com/amp-exporter/amp-exporter/parser/toolname"
)

// ErrNotThread reports a JSON document that is not an Amp thread: not an
// object, or an object without the top-level revision counter "v" (stray
// settings.json files live in the same directory).
var ErrNotThread = errors.New("not an Amp thread: no top-level \"v\"")

// Parse-error reasons, used as the `reason` label of
// amp_exporter_parse_errors_total.
const (
	ReasonNotThread = "not_thread"
	ReasonTruncated = "truncated"
	ReasonSyntax    = "invalid_json"
	ReasonTooLarge  = "too_large"
	ReasonRead      = "read_error"
)

// Reason classifies a Parse error into a short label value.
func Reason(err error) string {
	var syn *jsonscan.SyntaxError
	switch {
	case errors.Is(err, ErrNotThread):
		return ReasonNotThread
	case errors.Is(err, jsonscan.ErrTruncated):
		return ReasonTruncated
	case errors.As(err, &syn), errors.Is(err, jsonscan.ErrTokenTooLong):
		return ReasonSyntax
	default:
		return ReasonRead
	}
}

// Role of a message; roles the exporter does not count are not recorded.
type Role uint8

// Counted roles.
const (
	RoleOther Role = iota
	RoleUser
	RoleAssistant
)

// Thread is what the exporter needs of one thread file.
type Thread struct {
	// items is the parser's reusable storage for Summarize's items; gen
	// is the parser's parse count when t was parsed, and parses points to
	// that count, so a Summary can tell whether its items were reused.
	items  *[]Item
	gen    uint64
	parses *atomic.Uint64

	ID        string
	Version   int64
	Created   int64 // epoch ms
	AgentMode string
	// ForkPoint is the index of the last message copied from a parent
	// thread when this thread was forked, or -1. Amp copies
	// messages[0..ForkPoint] inclusive (forkThread: slice(0, index+1)).
	// It indexes the file's whole messages[] (Message.Index), info and
	// unknown-role messages included.
	ForkPoint int
	Messages  []Message
	Ledger    []LedgerEvent
	// FoldedModels are the hashes of the distinct model names past the
	// per-file budget (MaxModelsPerFile), read as FoldedModel.
	FoldedModels []uint64
	// FoldedTools: the same for tool names (hashed normalized).
	FoldedTools []uint64
	// Repository is the thread's git remote as host/path
	// (gitremote.Normalize), "" when it has none; RepositoryReason says
	// why a remote that is present gives none. The URL as written is
	// never kept.
	Repository       string
	RepositoryReason gitremote.Reason
}

// Message is a user or assistant message, reduced to what is counted.
type Message struct {
	Role Role
	// ID is the numeric messageId. Server exports use "M-…" strings:
	// HasID is false and IDHash is the string's hash (0 when there is no
	// string id either), IDIsProtocol set when it is an "M-" id.
	ID           int64
	HasID        bool
	IDHash       uint64
	IDIsProtocol bool
	// ProtoHash is the hash of protocolMessageID ("M-…"), 0 when absent:
	// the server's stable message id, preferred to a numeric messageId
	// (an index + 1, which another message takes after an edit).
	ProtoHash uint64
	// Index is the message's position in the file's messages[], where
	// messages the exporter does not record (info, unknown roles, entries
	// that are not objects) take their places too.
	Index int
	// CreatedAt is the server's time of the message (createdAt, an ISO
	// 8601 string in documents from the Amp server; local files never
	// carry it), epoch ms; 0 when absent or unparseable. It is the
	// message's time before any other (Item.At).
	CreatedAt int64

	// User messages.
	Prompt      bool  // at least one block that is not a tool_result
	SentAt      int64 // meta.sentAt, epoch ms; 0 when absent
	ToolResults []ToolResult

	// Assistant messages.
	State      string // state.type; "" when the message has no state
	StopReason string
	Model      string // message-level model, a fallback for usage.model
	Usage      *Usage
	ToolUses   []ToolUse
}

// Usage is an assistant message's usage block.
type Usage struct {
	Model            string
	Input            int64
	Output           int64
	CacheRead        int64
	CacheCreation    int64
	TotalInput       int64
	MaxInput         int64
	TotalTokens      int64
	Credits          float64
	HasCredits       bool
	Timestamp        int64 // epoch ms; 0 when absent or unparseable
	HasTokenNegative bool  // a negative count was seen and read as 0
	// Speed is what features says the message asked to run at (the Amp
	// server's usage carries it; speed.go).
	Speed Speed
}

// ToolUse is a tool call; IDs are hashed (HashID), they are only needed for
// pairing and as identities.
type ToolUse struct {
	IDHash uint64
	Name   string
	// Added and Removed are the lines an edit tool's input changes
	// (parser/linecount), set when Lines is.
	Added, Removed int64
	Lines          bool
	// Uncounted is why an edit tool call's lines were not counted although
	// its input holds them (Lines false): UncountedDiffBudget.
	Uncounted string
	// Intent is what a shell command's text says it can do (commit, open
	// a pull request, push): the reading of the command, not the command.
	Intent shellcmd.Intent
}

// ToolResult is the state of a tool call's run.
type ToolResult struct {
	ToolUseIDHash uint64
	Status        string
	// ExitCode is the result's exitCode, when HasExit: kept only on the
	// result of a tool_use of the file that is a shell command.
	ExitCode int64
	HasExit  bool
	// Proof is what a shell command's output proves it did (the lines of
	// a new commit, a pull request's URL, a push), read only when its
	// command can do any of it: the output itself is not kept.
	Proof shellcmd.Proof
}

// LedgerEvent is a usageLedger billing event (older thread files).
type LedgerEvent struct {
	// IDHash is the hash of the event's id (HashID), 0 when it has none.
	IDHash      uint64
	Model       string
	Input       int64
	Output      int64
	Total       int64
	Credits     float64
	HasCredits  bool
	ToMessageID int64
	HasTo       bool
	Timestamp   int64 // epoch ms; 0 when absent
}

// Parser decodes thread files, reusing its read window, interned strings
// and message storage across files: a Thread it returns is valid only until
// its next Parse or ParseBytes call. A Parser is not safe for concurrent
// use; use one per worker.
type Parser struct {
	// items is Summarize's storage for the items of the last Thread;
	// parses counts parses, for Summary.ItemsValid.
	items  []Item
	parses atomic.Uint64

	sc     *jsonscan.Scanner
	intern map[string]string
	models valueBudget // distinct model names of the file being parsed
	tools  valueBudget // distinct tool names of the file being parsed
	// msgStore is the storage of the last Thread's Messages, and the
	// others the storage its messages' usage blocks, tool uses and tool
	// results point into. They were most of what a parse allocated; the
	// watcher summarizes each thread before parsing the next, so they are
	// reused. A full usage slab is replaced, not grown, so that pointers
	// already handed out stay valid.
	msgStore    []Message
	usageSlab   []Usage
	toolUses    []ToolUse
	toolResults []ToolResult
	// edit holds the edit-tool input of the block being read (edit.go).
	edit editInput
	// diffs is the diff work the file being parsed may still spend on its
	// edits (MaxDiffWork).
	diffs linecount.Budget
	// uses tells, for each tool_use of the file read so far, whether it
	// is a shell command and what its command can do: only a shell
	// result's exitCode is read, and its output only when the command can
	// commit, push or open a pull request.
	uses map[uint64]useInfo
}

// useInfo is what a result needs to know of its tool_use.
type useInfo struct {
	shell  bool
	intent shellcmd.Intent
}

// maxKept bounds each of the storages a parser keeps between files: one
// huge thread should not pin them for good.
const maxKept = 1 << 14

// NewParser returns a parser.
func NewParser() *Parser {
	return &Parser{
		sc:     jsonscan.New(nil),
		intern: make(map[string]string),
	}
}

// SkipLineCounts makes the parser leave the lines of edits uncounted:
// each edit's input is still read, so a file parses or fails as it always
// does, and ToolUse.Lines still says whether its lines could be counted,
// but Added and Removed stay 0. For a reader that keeps no lines (the
// report, whose store counts the ledger's families alone): counting lines
// is about a twelfth of parsing, and the copies and diffs are most of it
// that can go (reading the strings stays).
func (p *Parser) SkipLineCounts() { p.edit.presence = true }

// DiffWork is the diff work the last parse spent on its edits, in
// linecount cells: MaxDiffWork at most, but for the last row of the search
// that ran out of it and the searches past it that cost no more than the
// lines they compared.
func (p *Parser) DiffWork() int64 { return p.diffs.Used() }

// Parse decodes one thread from r. Errors are ErrNotThread, or wrap
// jsonscan.ErrTruncated, jsonscan.ErrTokenTooLong, *jsonscan.SyntaxError or
// a read error; Reason classifies them.
func (p *Parser) Parse(r io.Reader) (*Thread, error) {
	p.sc.Reset(r)
	return p.parse(nil)
}

// ParseBytes decodes one thread from memory.
func (p *Parser) ParseBytes(b []byte) (*Thread, error) {
	p.sc.ResetBytes(b)
	return p.parse(nil)
}

// ParseParts decodes, from memory, the thread a server sends in parts: the
// document data without its messages (any "messages" member it has is
// ignored) and the messages, the first of them at index from. The result
// is the one ParseBytes gives for the document the parts make,
// {...data, "messages": [from places, messages...]}, without that document
// being built: the messages are read where they lie. Each message must be
// one JSON value; one that is not an object takes its place and is
// skipped, as in a document.
func ParseParts[M ~[]byte](p *Parser, data []byte, from int, messages []M) (*Thread, error) {
	p.sc.ResetBytes(data)
	return p.parse(&parts{from: from, n: len(messages), at: func(i int) []byte { return messages[i] }})
}

// parts are the messages of a thread parsed by ParseParts.
type parts struct {
	from, n int
	at      func(int) []byte
}

// isProtocolID reports whether a message id is one of the server's protocol
// ids ("M-" and base-62 characters).
func isProtocolID(b []byte) bool {
	return len(b) > 2 && b[0] == 'M' && b[1] == '-'
}

func (p *Parser) str(b []byte) string {
	if s, ok := p.intern[string(b)]; ok {
		return s
	}
	if len(p.intern) > 4096 {
		// Interning only pays for the few values that repeat (models,
		// tool names, statuses); do not let a hostile file grow it.
		clear(p.intern)
	}
	s := string(b)
	p.intern[s] = s
	return s
}

func (p *Parser) parse(pt *parts) (*Thread, error) {
	sc := p.sc
	if sc.Peek() != jsonscan.Object {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("decode thread: %w", err)
		}
		return nil, ErrNotThread
	}
	t := &Thread{ForkPoint: -1, Messages: p.msgStore[:0]}
	p.models.reset()
	p.tools.reset()
	p.diffs.Reset(MaxDiffWork)
	defer func() { t.FoldedModels, t.FoldedTools = p.models.foldedValues(), p.tools.foldedValues() }()
	p.usageSlab, p.toolUses, p.toolResults = p.usageSlab[:0], p.toolUses[:0], p.toolResults[:0]
	if len(p.uses) > maxKept {
		p.uses = nil
	}
	if p.uses == nil {
		p.uses = make(map[uint64]useInfo)
	}
	clear(p.uses)

	t.items, t.gen, t.parses = &p.items, p.parses.Add(1), &p.parses
	if cap(p.items) > maxKept {
		p.items = nil
	}
	defer func() {
		p.msgStore = keep(t.Messages)
		p.usageSlab, p.toolUses, p.toolResults = keep(p.usageSlab), keep(p.toolUses), keep(p.toolResults)
	}()
	hasV := false
	forkRelationship := -1
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		switch string(key) {
		case "v":
			hasV = true
			t.Version, _ = sc.Int()
		case "id":
			if v, ok := sc.String(); ok {
				t.ID = string(v)
			}
		case "created":
			t.Created, _ = sc.Int()
		case "agentMode":
			if v, ok := sc.String(); ok {
				t.AgentMode = p.str(v)
			}
		case "forkPointIndex":
			t.ForkPoint = -1
			if v, ok := sc.Int(); ok && v >= 0 && v < 1<<31 {
				t.ForkPoint = int(v)
			}
		case "messages":
			if pt != nil {
				// The messages come in parts; the document's own are
				// replaced by them.
				sc.Skip()
				continue
			}
			// A key given twice takes its last value, as JSON.parse does
			// (the server's thread.data may carry a "messages" of its
			// own before the assembled one): never both.
			t.Messages = t.Messages[:0]
			p.messages(t)
		case "usageLedger":
			t.Ledger = t.Ledger[:0]
			p.ledger(t)
		case "relationships":
			forkRelationship = p.relationships()
		case "env":
			p.env(t)
		default:
			sc.Skip()
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("decode thread: %w", err)
	}
	if !sc.AtEOF() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("decode thread: %w", err)
		}
		return nil, fmt.Errorf("decode thread: %w", &jsonscan.SyntaxError{Offset: sc.Offset(), Msg: "data after the top-level value"})
	}
	if pt != nil {
		if err := p.partMessages(t, pt); err != nil {
			return nil, err
		}
	}
	if !hasV {
		return nil, ErrNotThread
	}
	p.shellExits(t)
	// forkPointIndex survives thread:truncate, which drops relationships;
	// the relationship is the fallback for files that lack it.
	if t.ForkPoint < 0 {
		t.ForkPoint = forkRelationship
	}
	return t, nil
}

func (p *Parser) messages(t *Thread) {
	sc := p.sc
	arr := sc.Array()
	// Every entry takes a position: forkPointIndex counts them all.
	for i := 0; arr.Next(); i++ {
		if sc.Peek() != jsonscan.Object {
			sc.Skip()
			continue
		}
		m := p.message()
		if m.Role != RoleOther {
			m.Index = i
			t.Messages = append(t.Messages, m)
		}
	}
}

// partMessages reads the messages of a thread parsed in parts, each on its
// own, as messages does those of a document.
func (p *Parser) partMessages(t *Thread, pt *parts) error {
	sc := p.sc
	for i := range pt.n {
		sc.ResetBytes(pt.at(i))
		if sc.Peek() != jsonscan.Object {
			sc.Skip()
		} else if m := p.message(); m.Role != RoleOther {
			m.Index = pt.from + i
			t.Messages = append(t.Messages, m)
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("decode thread: message %d: %w", pt.from+i, err)
		}
		if !sc.AtEOF() {
			if err := sc.Err(); err != nil {
				return fmt.Errorf("decode thread: message %d: %w", pt.from+i, err)
			}
			return fmt.Errorf("decode thread: message %d: %w", pt.from+i, &jsonscan.SyntaxError{Offset: sc.Offset(), Msg: "data after the message"})
		}
	}
	return nil
}

// keep returns s emptied for reuse, or nil when it is too large to keep.
func keep[T any](s []T) []T {
	if cap(s) > maxKept {
		return nil
	}
	return s[:0]
}

// newUsage returns a zeroed Usage from the parser's slab.
func (p *Parser) newUsage() *Usage {
	if len(p.usageSlab) == cap(p.usageSlab) {
		p.usageSlab = make([]Usage, 0, max(64, 2*cap(p.usageSlab)))
	}
	p.usageSlab = p.usageSlab[:len(p.usageSlab)+1]
	u := &p.usageSlab[len(p.usageSlab)-1]
	*u = Usage{}
	return u
}

func (p *Parser) message() Message {
	sc := p.sc
	var m Message
	nonToolResult := false
	// The message's tool uses and results are appended to the parser's
	// storage while its content is read, and sliced out at the end.
	uses, results := len(p.toolUses), len(p.toolResults)
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		switch string(key) {
		case "role":
			m.Role = RoleOther
			if v, ok := sc.String(); ok {
				switch string(v) {
				case "user":
					m.Role = RoleUser
				case "assistant":
					m.Role = RoleAssistant
				default:
					m.Role = RoleOther
				}
			}
		case "messageId":
			m.ID, m.HasID, m.IDHash, m.IDIsProtocol = 0, false, 0, false
			switch sc.Peek() {
			case jsonscan.Number:
				m.ID, m.HasID = sc.Int()
			case jsonscan.String:
				if v, ok := sc.String(); ok {
					m.IDHash, m.IDIsProtocol = hashID(v), isProtocolID(v)
				}
			default:
				sc.Skip()
			}
		case "content":
			// The last "content" wins: drop the blocks of an earlier one.
			p.toolUses, p.toolResults = p.toolUses[:uses], p.toolResults[:results]
			nonToolResult = false
			switch sc.Peek() {
			case jsonscan.String:
				// A bare string is one text block (TX's defensive path).
				sc.Skip()
				nonToolResult = true
			case jsonscan.Array:
				if p.content(&m) {
					nonToolResult = true
				}
			default:
				sc.Skip()
			}
		case "createdAt":
			m.CreatedAt = 0
			if v, ok := sc.String(); ok {
				m.CreatedAt = parseTimestamp(v)
			}
		case "meta":
			p.meta(&m)
		case "state":
			p.state(&m)
		case "usage":
			if sc.Peek() == jsonscan.Object {
				m.Usage = p.usage()
			} else {
				m.Usage = nil
				sc.Skip()
			}
		case "protocolMessageID":
			m.ProtoHash = 0
			if v, ok := sc.String(); ok && isProtocolID(v) {
				m.ProtoHash = hashID(v)
			}
		case "model":
			if v, ok := sc.String(); ok {
				m.Model = p.model(v)
			}
		default:
			sc.Skip()
		}
	}
	if n := len(p.toolUses); n > uses {
		m.ToolUses = p.toolUses[uses:n:n]
	}
	if n := len(p.toolResults); n > results {
		m.ToolResults = p.toolResults[results:n:n]
	}
	m.Prompt = m.Role == RoleUser && nonToolResult
	if m.Role != RoleUser {
		m.ToolResults = nil
		m.SentAt = 0
	}
	if m.Role != RoleAssistant {
		m.ToolUses, m.Usage, m.State, m.StopReason = nil, nil, "", ""
	}
	return m
}

// content reads a message's blocks and reports whether any block is not a
// tool_result.
func (p *Parser) content(m *Message) bool {
	sc := p.sc
	nonToolResult := false
	arr := sc.Array()
	for arr.Next() {
		if sc.Peek() != jsonscan.Object {
			sc.Skip()
			nonToolResult = true
			continue
		}
		var (
			typ                  string
			idHash, toolUseHash  uint64
			hasID, hasToolUseID  bool
			name, normName, stat string
			edit                 editKind
			exit                 int64
			hasExit              bool
			proof                shellcmd.Proof
			shellName            bool
		)
		p.edit.reset()
		obj := sc.Object()
		for key, ok := obj.Next(); ok; key, ok = obj.Next() {
			switch string(key) {
			case "type":
				if v, ok := sc.String(); ok {
					typ = p.str(v)
				}
				if typ != "tool_use" && typ != "tool_result" {
					// Text, thinking, images: nothing else in the block
					// is counted, and it is where the bulk is.
					obj.SkipRest()
				}
			case "id":
				if v, ok := sc.String(); ok {
					idHash, hasID = hashID(v), true
				}
			case "name":
				if v, ok := sc.String(); ok {
					edit = editKindOf(v)
					shellName = string(v) == "Bash" || string(v) == "shell_command"
					name = p.tool(v)
				}
			case "normalizedName":
				if v, ok := sc.String(); ok {
					normName = p.tool(v)
				}
			case "input":
				// The name usually comes first: the input of a tool
				// that edits nothing is skipped unread.
				if countLines && (edit != editNone || name == "") || countCommits && (name == "" || shellName) {
					p.editInput(shellName)
				} else {
					sc.Skip()
				}
			case "toolUseID":
				if v, ok := sc.String(); ok {
					toolUseHash, hasToolUseID = hashID(v), true
				}
			case "run":
				// A result whose tool_use is not known yet (out of order)
				// has its exitCode read too, in case.
				u, known := p.uses[toolUseHash]
				// Its output too when the command can have committed,
				// pushed or opened a pull request (unknown yet: in case).
				want := u.intent
				if !known || !hasToolUseID {
					want = shellcmd.AnyIntent
				}
				if !countCommits {
					want = shellcmd.Intent{}
				}
				stat, exit, hasExit, proof = p.run(readExits && (u.shell || !known || !hasToolUseID), want)
			default:
				sc.Skip()
			}
		}
		switch typ {
		case "tool_result":
			if hasToolUseID && stat != "" {
				p.toolResults = append(p.toolResults, ToolResult{ToolUseIDHash: toolUseHash, Status: stat, ExitCode: exit, HasExit: hasExit, Proof: proof})
			}
			continue
		case "tool_use":
			if hasID {
				if normName != "" {
					name = normName
				}
				tu := ToolUse{IDHash: idHash, Name: name}
				shell := toolname.Normalize(name) == toolname.Bash
				switch {
				case !shell:
				case p.edit.hasIntent:
					tu.Intent = p.edit.intent
				case p.edit.hasCmd:
					tu.Intent = shellcmd.ReadCommand(view(p.edit.cmd))
				}
				p.uses[idHash] = useInfo{shell: shell, intent: tu.Intent}
				tu.Added, tu.Removed, tu.Lines, tu.Uncounted = p.edit.count(edit, &p.diffs)
				p.toolUses = append(p.toolUses, tu)
			}
		}
		nonToolResult = true
	}
	return nonToolResult
}

// shellExits keeps ToolResult.ExitCode only on the results of shell
// commands: a result read before its tool_use had it read in case, and the
// tool uses that count are those the thread keeps (an assistant's).
func (p *Parser) shellExits(t *Thread) {
	clear(p.uses)
	for i := range t.Messages {
		for _, u := range t.Messages[i].ToolUses {
			p.uses[u.IDHash] = useInfo{shell: toolname.Normalize(u.Name) == toolname.Bash}
		}
	}
	for i := range t.Messages {
		for j := range t.Messages[i].ToolResults {
			r := &t.Messages[i].ToolResults[j]
			if !p.uses[r.ToolUseIDHash].shell {
				r.ExitCode, r.HasExit, r.Proof = 0, false, shellcmd.Proof{}
			}
		}
	}
}

// run reads a tool result's run: its status, and when exit is asked the
// exitCode of a result object that has one (shell tools) and, for what
// want says its command can do, the proof its output holds (read from
// its first MaxOutputBytes, which is all the scanner holds; the Amp CLI
// keeps a shell output's last 50,000 characters). The rest (other
// outputs, progress, ~debug: the bulk of the file) is skipped.
func (p *Parser) run(exit bool, want shellcmd.Intent) (status string, code int64, hasExit bool, proof shellcmd.Proof) {
	sc := p.sc
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		switch string(key) {
		case "status":
			if v, ok := sc.String(); ok {
				status = p.str(v)
			}
			if !exit {
				obj.SkipRest()
				return status, 0, false, proof
			}
		case "result":
			if !exit || sc.Peek() != jsonscan.Object {
				sc.Skip()
				continue
			}
			res := sc.Object()
			for key, ok := res.Next(); ok; key, ok = res.Next() {
				switch string(key) {
				case "exitCode":
					code, hasExit = sc.Int()
				case "output":
					if !want.Any() {
						sc.Skip()
						continue
					}
					proof = shellcmd.Proof{}
					if v, ok := sc.StringPrefix(shellcmd.MaxOutputBytes); ok {
						proof = shellcmd.ReadOutput(view(v), want)
					}
				default:
					sc.Skip()
				}
			}
		default:
			sc.Skip()
		}
	}
	return status, code, hasExit, proof
}

func (p *Parser) meta(m *Message) {
	sc := p.sc
	m.SentAt = 0
	if sc.Peek() != jsonscan.Object {
		sc.Skip()
		return
	}
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		if string(key) == "sentAt" {
			m.SentAt, _ = sc.Int()
			continue
		}
		sc.Skip()
	}
}

func (p *Parser) state(m *Message) {
	sc := p.sc
	m.State, m.StopReason = "", ""
	if sc.Peek() != jsonscan.Object {
		sc.Skip()
		return
	}
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		switch string(key) {
		case "type":
			if v, ok := sc.String(); ok {
				m.State = p.str(v)
			}
		case "stopReason":
			if v, ok := sc.String(); ok {
				m.StopReason = p.str(v)
			}
		default:
			sc.Skip()
		}
	}
}

// count reads a token count; null, absent, negative or non-numeric values
// are 0, as in ccusage (serde's as_u64).
func (p *Parser) count(u *Usage) int64 {
	v, ok := p.sc.Int()
	if !ok {
		return 0
	}
	if v < 0 {
		if u != nil {
			u.HasTokenNegative = true
		}
		return 0
	}
	return v
}

func (p *Parser) usage() *Usage {
	sc := p.sc
	u := p.newUsage()
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		switch string(key) {
		case "model":
			if v, ok := sc.String(); ok {
				u.Model = p.model(v)
			}
		case "inputTokens":
			u.Input = p.count(u)
		case "outputTokens":
			u.Output = p.count(u)
		case "cacheReadInputTokens":
			u.CacheRead = p.count(u)
		case "cacheCreationInputTokens":
			u.CacheCreation = p.count(u)
		case "totalInputTokens":
			u.TotalInput = p.count(u)
		case "maxInputTokens":
			u.MaxInput = p.count(u)
		case "totalTokens":
			u.TotalTokens = p.count(u)
		case "credits":
			u.Credits, u.HasCredits = sc.Float()
		case "timestamp":
			if v, ok := sc.String(); ok {
				u.Timestamp = parseTimestamp(v)
			}
		case "features":
			u.Speed = p.features()
		default:
			sc.Skip()
		}
	}
	return u
}

func (p *Parser) ledger(t *Thread) {
	sc := p.sc
	if sc.Peek() != jsonscan.Object {
		sc.Skip()
		return
	}
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		if string(key) != "events" {
			sc.Skip()
			continue
		}
		t.Ledger = t.Ledger[:0]
		if sc.Peek() != jsonscan.Array {
			sc.Skip()
			continue
		}
		arr := sc.Array()
		for arr.Next() {
			if sc.Peek() != jsonscan.Object {
				sc.Skip()
				continue
			}
			t.Ledger = append(t.Ledger, p.ledgerEvent())
		}
	}
}

func (p *Parser) ledgerEvent() LedgerEvent {
	sc := p.sc
	var e LedgerEvent
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		switch string(key) {
		case "id":
			if v, ok := sc.String(); ok {
				e.IDHash = hashID(v)
			}
		case "model":
			if v, ok := sc.String(); ok {
				e.Model = p.model(v)
			}
		case "credits":
			e.Credits, e.HasCredits = sc.Float()
		case "timestamp":
			if v, ok := sc.String(); ok {
				e.Timestamp = parseTimestamp(v)
			}
		case "toMessageId":
			if sc.Peek() == jsonscan.Number {
				e.ToMessageID, e.HasTo = sc.Int()
			} else {
				sc.Skip()
			}
		case "tokens":
			if sc.Peek() != jsonscan.Object {
				sc.Skip()
				continue
			}
			tok := sc.Object()
			for k, ok := tok.Next(); ok; k, ok = tok.Next() {
				switch string(k) {
				case "input":
					e.Input = p.count(nil)
				case "output":
					e.Output = p.count(nil)
				case "total":
					e.Total = p.count(nil)
				default:
					sc.Skip()
				}
			}
		default:
			sc.Skip()
		}
	}
	return e
}

// relationships returns the messageIndex of this thread's fork-child
// relationship, or -1.
func (p *Parser) relationships() int {
	sc := p.sc
	fork := -1
	arr := sc.Array()
	for arr.Next() {
		if sc.Peek() != jsonscan.Object {
			sc.Skip()
			continue
		}
		var typ, role string
		idx := int64(-1)
		obj := sc.Object()
		for key, ok := obj.Next(); ok; key, ok = obj.Next() {
			switch string(key) {
			case "type":
				if v, ok := sc.String(); ok {
					typ = p.str(v)
				}
			case "role":
				if v, ok := sc.String(); ok {
					role = p.str(v)
				}
			case "messageIndex":
				if v, ok := sc.Int(); ok {
					idx = v
				}
			default:
				sc.Skip()
			}
		}
		if typ == "fork" && role == "child" && idx >= 0 && idx < 1<<31 {
			fork = int(idx)
		}
	}
	return fork
}
