// Package streamjson decodes the JSON lines of `amp --execute --stream-json`
// (and of the SDKs that wrap it) and turns a run's lines into counter
// increments. It is pure: no clock, no I/O.
//
// The format is described in docs/formats/stream-json.md §2: what the CLI really
// emits differs from what the SDK types declare, and both are accepted.
package streamjson

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/amp-exporter/amp-exporter/internal/jsonscan"
	"github.com/amp-exporter/amp-exporter/parser/shellcmd"
)

// Kind is a line's top-level "type".
type Kind uint8

// Line kinds; KindOther covers types this exporter does not know.
const (
	KindOther Kind = iota
	KindSystem
	KindUser
	KindAssistant
	KindResult
)

// Parse-error reasons (the `reason` label of
// amp_exporter_parse_errors_total{source="stream"}).
const (
	ReasonInvalidJSON = "invalid_json"
	ReasonNotObject   = "not_an_object"
	ReasonLineTooLong = "line_too_long"
)

// ErrNotObject reports a line that is JSON but not an object.
var ErrNotObject = errors.New("stream-json line is not a JSON object")

// Reason classifies a ParseLine error.
func Reason(err error) string {
	if errors.Is(err, ErrNotObject) {
		return ReasonNotObject
	}
	return ReasonInvalidJSON
}

// Usage is the CLI's per-inference usage (its Anthropic-style field names).
type Usage struct {
	Input         int64
	Output        int64
	CacheRead     int64
	CacheCreation int64
}

// ToolUse is a tool call in an assistant line. Intent is what its input's
// shell command (cmd, command) can do (parser/shellcmd); nothing of the
// command is kept.
type ToolUse struct {
	ID, Name string
	Intent   shellcmd.Intent
}

// ToolResult is a tool result in a user line. A shell result's content is
// the JSON of its output and exitCode: Proof is what that output proves
// (read for every proof, the tool not being known here), Exit its exit
// code when HasExit.
type ToolResult struct {
	ToolUseID string
	Status    string // done, error, cancelled, rejected
	Proof     shellcmd.Proof
	Exit      int64
	HasExit   bool
}

// Message is one decoded line, reduced to what is counted.
type Message struct {
	Kind    Kind
	Subtype string
	// SessionID is the line's session_id: the Amp thread id of the run
	// (empty when absent or longer than maxSessionID).
	SessionID string

	// user
	Prompt      bool
	ToolResults []ToolResult

	// assistant
	Model      string
	StopReason string
	Usage      *Usage
	ToolUses   []ToolUse

	// result
	IsError           bool
	DurationMs        int64
	HasDuration       bool
	NumTurns          int64
	HasTurns          bool
	Error             string // the first errorPrefix bytes
	PermissionDenials []string
	ResultUsage       *Usage // SDK-declared; the CLI does not emit it yet
}

// maxSessionID bounds a kept session_id.
const maxSessionID = 128

// errorPrefix bounds how much of an error text is kept: enough for the
// permission-denial list, never a whole provider dump.
const errorPrefix = 4096

// The CLI's tool-result texts for non-done states (docs/formats/stream-json.md §2.1).
const (
	cancelledPrefix = "Tool execution cancelled:"
	rejectedPrefix  = "Tool execution rejected by user:"
	approvalMarker  = "require user approval"
)

// Parser decodes lines, reusing its buffers; not safe for concurrent use.
type Parser struct {
	sc *jsonscan.Scanner
	// inner reads a shell result's content, a JSON document in a string.
	inner *jsonscan.Scanner
}

// NewParser returns a parser.
func NewParser() *Parser { return &Parser{sc: jsonscan.NewBytes(nil), inner: jsonscan.NewBytes(nil)} }

// ParseLine decodes one line (without its newline). A blank line is not an
// error: it returns ok=false.
func (p *Parser) ParseLine(line []byte) (m Message, ok bool, err error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return Message{}, false, nil
	}
	sc := p.sc
	sc.ResetBytes(line)
	defer sc.ResetBytes(nil)
	if sc.Peek() != jsonscan.Object {
		sc.Skip()
		if sc.Err() == nil && sc.AtEOF() {
			return Message{}, false, ErrNotObject
		}
		if e := sc.Err(); e != nil {
			return Message{}, false, fmt.Errorf("decode stream-json line: %w", e)
		}
		return Message{}, false, fmt.Errorf("decode stream-json line: %w", &jsonscan.SyntaxError{Offset: sc.Offset(), Msg: "not a JSON value"})
	}
	obj := sc.Object()
	for key, more := obj.Next(); more; key, more = obj.Next() {
		switch string(key) {
		case "type":
			if v, ok := sc.String(); ok {
				switch string(v) {
				case "system":
					m.Kind = KindSystem
				case "user":
					m.Kind = KindUser
				case "assistant":
					m.Kind = KindAssistant
				case "result":
					m.Kind = KindResult
				}
			}
		case "subtype":
			if v, ok := sc.String(); ok {
				m.Subtype = string(v)
			}
		case "session_id":
			if v, ok := sc.String(); ok && len(v) <= maxSessionID {
				m.SessionID = string(v)
			}
		case "message":
			p.message(&m)
		case "is_error":
			m.IsError, _ = sc.Bool()
		case "duration_ms":
			if v, ok := sc.Float(); ok && v >= 0 {
				m.DurationMs, m.HasDuration = int64(v), true
			}
		case "num_turns":
			if v, ok := sc.Int(); ok && v >= 0 {
				m.NumTurns, m.HasTurns = v, true
			}
		case "error":
			if v, ok := sc.StringPrefix(errorPrefix); ok {
				m.Error = string(v)
			}
		case "permission_denials":
			arr := sc.Array()
			for arr.Next() {
				if v, ok := sc.String(); ok && len(v) > 0 {
					m.PermissionDenials = append(m.PermissionDenials, string(v))
				}
			}
		case "usage":
			m.ResultUsage = p.usage()
		default:
			sc.Skip()
		}
	}
	if err := sc.Err(); err != nil {
		return Message{}, false, fmt.Errorf("decode stream-json line: %w", err)
	}
	if !sc.AtEOF() {
		return Message{}, false, fmt.Errorf("decode stream-json line: %w", &jsonscan.SyntaxError{Offset: sc.Offset(), Msg: "data after the JSON object"})
	}
	if m.Kind != KindResult {
		m.ResultUsage = nil
	}
	return m, true, nil
}

func (p *Parser) message(m *Message) {
	sc := p.sc
	obj := sc.Object()
	for key, more := obj.Next(); more; key, more = obj.Next() {
		switch string(key) {
		case "content":
			if sc.Peek() == jsonscan.String {
				sc.Skip()
				m.Prompt = true // a bare string is a text prompt
				continue
			}
			p.content(m)
		case "model":
			if v, ok := sc.String(); ok {
				m.Model = string(v)
			}
		case "stop_reason":
			if v, ok := sc.String(); ok {
				m.StopReason = string(v)
			}
		case "usage":
			m.Usage = p.usage()
		default:
			sc.Skip()
		}
	}
}

func (p *Parser) content(m *Message) {
	sc := p.sc
	arr := sc.Array()
	for arr.Next() {
		var typ, id, name, toolUseID string
		var isError bool
		var text []byte
		var in shellcmd.Intent
		var sh shellResult
		obj := sc.Object()
		for key, more := obj.Next(); more; key, more = obj.Next() {
			switch string(key) {
			case "type":
				if v, ok := sc.String(); ok {
					typ = string(v)
				}
			case "id":
				if v, ok := sc.String(); ok {
					id = string(v)
				}
			case "name":
				if v, ok := sc.String(); ok {
					name = string(v)
				}
			case "tool_use_id":
				if v, ok := sc.String(); ok {
					toolUseID = string(v)
				}
			case "is_error":
				isError, _ = sc.Bool()
			case "content":
				text, sh = p.resultText()
			case "input":
				in = p.commandIntent()
			default:
				sc.Skip()
			}
		}
		switch typ {
		case "tool_use":
			m.ToolUses = append(m.ToolUses, ToolUse{ID: id, Name: name, Intent: in})
		case "tool_result":
			m.ToolResults = append(m.ToolResults, ToolResult{ToolUseID: toolUseID, Status: resultStatus(isError, text), Proof: sh.proof, Exit: sh.exit, HasExit: sh.hasExit})
		case "text":
			m.Prompt = true
		}
	}
}

// commandIntent reads a tool_use's input for a shell command (Bash's cmd,
// shell_command's command) and says what it can do.
func (p *Parser) commandIntent() shellcmd.Intent {
	sc := p.sc
	if sc.Peek() != jsonscan.Object {
		sc.Skip()
		return shellcmd.Intent{}
	}
	var in shellcmd.Intent
	obj := sc.Object()
	for key, more := obj.Next(); more; key, more = obj.Next() {
		switch string(key) {
		case "cmd", "command":
			if v, ok := sc.StringPrefix(shellcmd.MaxCommandBytes); ok {
				in = shellcmd.ReadCommand(string(v))
			}
		default:
			sc.Skip()
		}
	}
	return in
}

// shellResult is what a shell result's content says: its exit code and
// what its output proves.
type shellResult struct {
	proof   shellcmd.Proof
	exit    int64
	hasExit bool
}

// shellContent reads a result's content as a shell result's, a JSON
// object with output and exitCode; any other content gives none.
func (p *Parser) shellContent(content []byte) shellResult {
	var r shellResult
	if len(content) == 0 || content[0] != '{' {
		return r
	}
	sc := p.inner
	sc.ResetBytes(content)
	defer sc.ResetBytes(nil)
	if sc.Peek() != jsonscan.Object {
		return r
	}
	obj := sc.Object()
	for key, more := obj.Next(); more; key, more = obj.Next() {
		switch string(key) {
		case "output":
			if v, ok := sc.StringPrefix(shellcmd.MaxOutputBytes); ok {
				r.proof = shellcmd.ReadOutput(string(v), shellcmd.AnyIntent)
			}
		case "exitCode":
			r.exit, r.hasExit = sc.Int()
		default:
			sc.Skip()
		}
	}
	if sc.Err() != nil {
		return shellResult{}
	}
	return r
}

// resultText returns the start of a tool result's content (a string, or
// the first text block of an array) and, for a string, what it says as a
// shell result's content.
func (p *Parser) resultText() ([]byte, shellResult) {
	sc := p.sc
	switch sc.Peek() {
	case jsonscan.String:
		v, _ := sc.StringPrefix(shellcmd.MaxOutputBytes + 4096)
		return append([]byte(nil), v[:min(len(v), 64)]...), p.shellContent(v)
	case jsonscan.Array:
		var out []byte
		arr := sc.Array()
		for arr.Next() {
			obj := sc.Object()
			for key, more := obj.Next(); more; key, more = obj.Next() {
				if string(key) == "text" && out == nil {
					v, _ := sc.StringPrefix(64)
					out = append([]byte{}, v...)
					continue
				}
				sc.Skip()
			}
		}
		return out, shellResult{}
	}
	sc.Skip()
	return nil, shellResult{}
}

func resultStatus(isError bool, text []byte) string {
	if !isError {
		return "done"
	}
	switch t := string(text); {
	case strings.HasPrefix(t, cancelledPrefix):
		return "cancelled"
	case strings.HasPrefix(t, rejectedPrefix):
		return "rejected"
	}
	return "error"
}

func (p *Parser) usage() *Usage {
	sc := p.sc
	if sc.Peek() != jsonscan.Object {
		sc.Skip()
		return nil
	}
	u := &Usage{}
	count := func() int64 {
		v, ok := sc.Int()
		if !ok || v < 0 {
			return 0
		}
		return v
	}
	obj := sc.Object()
	for key, more := obj.Next(); more; key, more = obj.Next() {
		switch string(key) {
		case "input_tokens":
			u.Input = count()
		case "output_tokens":
			u.Output = count()
		case "cache_read_input_tokens":
			u.CacheRead = count()
		case "cache_creation_input_tokens":
			u.CacheCreation = count()
		default:
			sc.Skip()
		}
	}
	return u
}

// deniedTools extracts the tool names from the CLI's error "The following
// tools require user approval, which is not supported in stream JSON mode:
// A, B".
func deniedTools(errText string) []string {
	i := strings.Index(errText, approvalMarker)
	if i < 0 {
		return nil
	}
	j := strings.LastIndex(errText[i:], ":")
	if j < 0 {
		return nil
	}
	var out []string
	for _, name := range strings.Split(errText[i+j+1:], ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}
