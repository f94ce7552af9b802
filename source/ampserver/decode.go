package ampserver

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/amp-exporter/amp-exporter/internal/jsonscan"
)

// Thread pages are most of what the exporter reads from the server, and
// nearly all of their bytes are messages it hands on unread to the thread
// parser. encoding/json would build and validate every one of them (about
// 100 MB/s); the answers that carry messages are scanned instead
// (internal/jsonscan): the envelope and the result's small members are
// decoded, each message is kept as the span of the body it occupies,
// neither copied nor looked into. The thread parser reads them afterwards
// with the same scanner, and reports a message it cannot read as a parse
// error of the thread.

// envelope is the {ok, result | error} answer of every method.
type envelope struct {
	OK     *bool `json:"ok"`
	Result any   `json:"result"`
	Error  *struct {
		Code              string   `json:"code"`
		Message           string   `json:"message"`
		RetryAfterSeconds *float64 `json:"retryAfterSeconds"`
	} `json:"error"`
	RetryAfterSeconds *float64 `json:"retryAfterSeconds"`
}

// scannedResult is a result read by scanning: scanMember reads one member
// of the result object (the scanner is at its value) and reports whether
// it did (else it is skipped).
type scannedResult interface {
	scanMember(key []byte, sc *jsonscan.Scanner, body []byte) (bool, error)
}

// errShape is a result member of another shape than the CLI's.
type errShape struct{ member string }

func (e errShape) Error() string { return fmt.Sprintf("member %q has another shape", e.member) }

// scan decodes an envelope whose result r reads: envErr when it is not an
// envelope, resultErr (with a detail) when its result has another shape.
func (env *envelope) scan(body []byte, r scannedResult) (resultErr bool, detail string, envErr error) {
	sc := jsonscan.NewBytes(body)
	if sc.Peek() != jsonscan.Object {
		return false, "", errors.New("not an object")
	}
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		switch string(key) {
		case "ok":
			if sc.Peek() == jsonscan.Bool {
				v, _ := sc.Bool()
				env.OK = &v
			} else {
				sc.Skip()
			}
		case "result":
			if sc.Peek() == jsonscan.Null {
				sc.Skip()
				continue
			}
			if sc.Peek() != jsonscan.Object {
				resultErr, detail = true, "not an object"
				sc.Skip()
				continue
			}
			res := sc.Object()
			for k, ok := res.Next(); ok; k, ok = res.Next() {
				done, err := r.scanMember(k, sc, body)
				if err != nil && !resultErr {
					resultErr, detail = true, err.Error()
				}
				if !done {
					sc.Skip()
				}
			}
		case "error", "retryAfterSeconds":
			// Small: decoded as they always were.
			name := string(key)
			raw := span(sc, body)
			var err error
			if name == "error" {
				err = json.Unmarshal(raw, &env.Error)
			} else {
				err = json.Unmarshal(raw, &env.RetryAfterSeconds)
			}
			if err != nil {
				env.Error, env.RetryAfterSeconds = nil, nil
			}
		default:
			sc.Skip()
		}
	}
	if err := sc.Err(); err != nil {
		return false, "", err
	}
	if !sc.AtEOF() {
		return false, "", errors.New("data after the envelope")
	}
	return resultErr, detail, nil
}

// span returns the bytes of the value the scanner is at, skipping it (nil
// once the scanner failed: the envelope is then refused whole).
func span(sc *jsonscan.Scanner, body []byte) []byte {
	sc.Peek() // past the whitespace before the value
	from := sc.Offset()
	sc.Skip()
	to := sc.Offset()
	if sc.Err() != nil || from < 0 || to < from || to > int64(len(body)) {
		return nil
	}
	return body[from:to:to]
}

// scanMessages reads an array of messages as spans of body.
func scanMessages(sc *jsonscan.Scanner, body []byte) ([]json.RawMessage, error) {
	switch sc.Peek() {
	case jsonscan.Null:
		sc.Skip()
		return nil, nil
	case jsonscan.Array:
	default:
		return nil, errShape{"messages"}
	}
	out := []json.RawMessage{}
	arr := sc.Array()
	for arr.Next() {
		out = append(out, span(sc, body))
	}
	return out, nil
}

func (t *Tail) scanMember(key []byte, sc *jsonscan.Scanner, body []byte) (bool, error) {
	var err error
	switch string(key) {
	case "thread":
		if err = json.Unmarshal(span(sc, body), &t.Thread); err != nil {
			err = errShape{"thread"}
		}
	case "messages":
		if t.Messages, err = scanMessages(sc, body); err != nil {
			return false, err // skipped
		}
	case "hasMoreBefore":
		if sc.Peek() != jsonscan.Bool {
			return false, errShape{"hasMoreBefore"}
		}
		t.HasMoreBefore, _ = sc.Bool()
	default:
		return false, nil
	}
	return true, err
}

func (p *Page) scanMember(key []byte, sc *jsonscan.Scanner, body []byte) (bool, error) {
	var err error
	switch string(key) {
	case "messages":
		if p.Messages, err = scanMessages(sc, body); err != nil {
			return false, err // skipped
		}
	case "nextMessageIndex":
		switch sc.Peek() {
		case jsonscan.Null:
			sc.Skip()
			p.NextMessageIndex = nil
		case jsonscan.Number:
			n, ok := sc.Int()
			if !ok || n < 0 || n > 1<<31 {
				return true, errShape{"nextMessageIndex"}
			}
			i := int(n)
			p.NextMessageIndex = &i
		default:
			return false, errShape{"nextMessageIndex"}
		}
	default:
		return false, nil
	}
	return true, err
}
