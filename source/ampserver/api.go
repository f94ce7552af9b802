package ampserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/labelvalue"
	"github.com/amp-exporter/amp-exporter/parser/gitremote"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// UserInfo is getUserInfo's result, reduced to what is used.
type UserInfo struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

// maxEmail bounds the account name (an address has at most 254 bytes):
// it is logged and shown on the landing page.
const maxEmail = 254

// maxUserID bounds the account's id (compared with threads' creators).
const maxUserID = 256

// GetUserInfo checks the key and names the account.
func (c *Client) GetUserInfo(ctx context.Context) (UserInfo, error) {
	var u UserInfo
	err := c.Call(ctx, MethodGetUserInfo, nil, &u)
	u.Email = bounded(u.Email, maxEmail)
	u.ID = bounded(u.ID, maxUserID)
	return u, err
}

// ListParams are listThreads' parameters.
type ListParams struct {
	IncludeArchived bool   `json:"includeArchived"`
	InstallationID  string `json:"installationID,omitempty"`
	Limit           int    `json:"limit"`
	Offset          int    `json:"offset"`
	// ThreadIDs lists only these threads (at most MaxThreadIDs).
	ThreadIDs []string `json:"threadIDs,omitempty"`
}

// MaxThreadIDs is how many ids one listThreads may name.
const MaxThreadIDs = 100

// Summary is one thread in a listing. Every field is optional on the
// wire.
type Summary struct {
	ID                   string  `json:"id"`
	V                    Version `json:"v"`
	Created              Time    `json:"created"`
	UserLastInteractedAt Time    `json:"userLastInteractedAt"`
	Archived             bool    `json:"archived"`
	AgentMode            string  `json:"agentMode"`
	CreatorUserID        string  `json:"creatorUserID"`
	// MessageCount is how many messages the thread has (messageCount,
	// else summaryStats.messageCount; 0 when the listing does not say).
	MessageCount int `json:"-"`
	// Repository is the thread's git remote as host/path, read from env
	// as in the thread's document (thread.RepositoryOf); the URL as
	// written is not kept.
	Repository       string           `json:"-"`
	RepositoryReason gitremote.Reason `json:"-"`
}

// UnmarshalJSON reads a summary and its message count from either place.
func (s *Summary) UnmarshalJSON(b []byte) error {
	type plain Summary
	var aux struct {
		*plain
		MessageCount Version `json:"messageCount"`
		SummaryStats *struct {
			MessageCount Version `json:"messageCount"`
		} `json:"summaryStats"`
		Env json.RawMessage `json:"env"`
	}
	aux.plain = (*plain)(s)
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	n := int64(aux.MessageCount)
	if n == 0 && aux.SummaryStats != nil {
		n = int64(aux.SummaryStats.MessageCount)
	}
	if n > 0 && n < 1<<31 {
		s.MessageCount = int(n)
	}
	s.Repository, s.RepositoryReason = thread.RepositoryOf(aux.Env)
	return nil
}

// LastActivity is when the thread last changed, as far as the summary
// says (epoch ms; 0 when unknown).
func (s Summary) LastActivity() int64 {
	return max(int64(s.UserLastInteractedAt), int64(s.Created))
}

// ListThreads returns one page of the account's threads, newest first.
func (c *Client) ListThreads(ctx context.Context, p ListParams) ([]Summary, error) {
	var out struct {
		Threads []Summary `json:"threads"`
	}
	if err := c.Call(ctx, MethodListThreads, p, &out); err != nil {
		return nil, err
	}
	for i := range out.Threads {
		out.Threads[i].bound()
	}
	return out.Threads, nil
}

// bound cuts the strings a summary keeps past its page (the changed
// threads of a whole listing wait for their fetch) to what they are used
// for: the agent mode is a label value, the creator is compared with the
// account's id (bounded alike). The id is refused by the sync when long.
func (s *Summary) bound() {
	if len(s.AgentMode) > labelvalue.MaxBytes {
		s.AgentMode = strings.Clone(labelvalue.Sanitize(s.AgentMode))
	}
	if len(s.CreatorUserID) > maxUserID {
		s.CreatorUserID = bounded(s.CreatorUserID, maxUserID)
	}
}

// Header is the record a thread document comes in (getThreadTail,
// getThread): the document is Data, not the header.
type Header struct {
	ID            string          `json:"id"`
	Title         *string         `json:"title"`
	UpdatedAt     Time            `json:"updatedAt"`
	CreatorUserID string          `json:"creatorUserID"`
	Data          json.RawMessage `json:"data"`
}

// Tail is getThreadTail's result.
type Tail struct {
	Thread        Header            `json:"thread"`
	Messages      []json.RawMessage `json:"messages"`
	HasMoreBefore bool              `json:"hasMoreBefore"`
	// body is the buffer Messages lie in, when they were scanned.
	body *[]byte
}

func (t *Tail) keepBody(b *[]byte) { t.body = b }

// GetThreadTail returns the thread's record (its document without
// messages in Thread.Data) and its last limit messages (1–500).
func (c *Client) GetThreadTail(ctx context.Context, id string, limit int) (Tail, error) {
	var t Tail
	if err := c.Call(ctx, MethodGetThreadTail, map[string]any{"thread": id, "limit": limit}, &t); err != nil {
		return t, err
	}
	if t.Messages == nil {
		// Not an empty thread (that is an empty array) but an answer
		// without its messages: fetched again at the next sync.
		putBody(t.body)
		return Tail{}, &Error{Method: MethodGetThreadTail, kind: ErrBadResponse, detail: "a tail without its messages"}
	}
	return t, nil
}

// GetThread returns the thread's record without its messages.
func (c *Client) GetThread(ctx context.Context, id string) (Header, error) {
	var out struct {
		Thread Header `json:"thread"`
	}
	err := c.Call(ctx, MethodGetThread, map[string]any{"thread": id}, &out)
	return out.Thread, err
}

// Page is getThreadMessagesPage's result.
type Page struct {
	Messages         []json.RawMessage `json:"messages"`
	NextMessageIndex *int              `json:"nextMessageIndex"`
	// body is the buffer Messages lie in, when they were scanned.
	body *[]byte
}

func (p *Page) keepBody(b *[]byte) { p.body = b }

// GetThreadMessagesPage returns up to limit (1–500) messages from index
// from of the thread's messages. A page must continue exactly where it
// says: when NextMessageIndex is set it equals from+len(Messages) and the
// page is not empty, else the answer is an ErrBadDocument (overlapping or
// skipping pages would count messages twice or lose them). A page without
// a messages array is an ErrBadResponse.
func (c *Client) GetThreadMessagesPage(ctx context.Context, id string, from, limit int) (Page, error) {
	var p Page
	if err := c.Call(ctx, MethodGetThreadMessagesPage, map[string]any{"thread": id, "fromIndex": from, "limit": limit}, &p); err != nil {
		return p, err
	}
	if p.Messages == nil {
		// No messages array (no result, a null one): not the end of the
		// thread but an answer without the page; the thread is fetched
		// again at the next sync.
		putBody(p.body)
		return Page{}, &Error{Method: MethodGetThreadMessagesPage, kind: ErrBadResponse, detail: "a page without its messages"}
	}
	if n := p.NextMessageIndex; n != nil && (*n != from+len(p.Messages) || len(p.Messages) == 0) {
		putBody(p.body)
		return Page{}, &Error{Method: MethodGetThreadMessagesPage, kind: ErrBadDocument,
			detail: fmt.Sprintf("page from %d with %d messages says the next starts at %d", from, len(p.Messages), *n)}
	}
	return p, nil
}

// PageSize is how many messages one getThreadMessagesPage asks for, as the
// CLI's export does.
const PageSize = 200

// maxPages bounds the pages of one thread (a server that never ends the
// paging must not keep the exporter busy for ever).
const maxPages = 10000

// Export is a thread, or its window, as the server sends it: its record's
// data and its messages. Parse reads it without building its document.
type Export struct {
	// Doc is the thread document with all its messages, the shape of a
	// local thread file: ExportThread's, not ExportFrom's or Repage's
	// (nil there).
	Doc []byte
	// Size is the length of that document, built or not.
	Size int64
	// V is the document's `v` as the tail gave it (0 when missing).
	V int64
	// CreatorUserID and UpdatedAt (epoch ms) are the record header's.
	CreatorUserID string
	UpdatedAt     int64
	// Data is the document without its messages, and Messages its
	// messages: Doc's parts, from index From of the thread's messages on
	// (0 for a whole thread).
	Data     json.RawMessage
	Messages []json.RawMessage
	From     int
	// bodies are the buffers Messages lie in.
	bodies []*[]byte
}

// Release gives the buffers the export's messages lie in back to the
// client's pool: after it, neither Messages nor anything that points into
// them may be used. An export that is not released is left to the garbage
// collector.
func (out *Export) Release() {
	for _, b := range out.bodies {
		putBody(b)
	}
	out.bodies, out.Messages = nil, nil
}

// ExportThread fetches a whole thread the way `amp threads export` does:
// the tail with limit 1, then, when there are earlier messages, every page
// from index 0. The document is the header's `data` with `messages` set to
// the messages fetched (replacing any `messages` key `data` has). The
// version is `v` as the tail gave it (the document may have grown while it
// was paged; that is picked up at the next sync). maxBytes bounds the
// assembled document.
func (c *Client) ExportThread(ctx context.Context, id string, maxBytes int64) (Export, error) {
	return c.exportThread(ctx, id, maxBytes, true)
}

// exportThread is ExportThread, building the document only with doc (the
// Syncer parses the parts where they lie).
func (c *Client) exportThread(ctx context.Context, id string, maxBytes int64, doc bool) (Export, error) {
	tail, err := c.GetThreadTail(ctx, id, 1)
	if err != nil {
		return Export{}, err
	}
	data := bytes.TrimSpace(tail.Thread.Data)
	if len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}' {
		return Export{}, &Error{Method: MethodGetThreadTail, kind: ErrBadDocument, detail: "thread.data is not an object"}
	}
	var head struct {
		V Version `json:"v"`
	}
	_ = json.Unmarshal(data, &head)
	out := Export{V: int64(head.V), CreatorUserID: bounded(tail.Thread.CreatorUserID, maxUserID), UpdatedAt: int64(tail.Thread.UpdatedAt), Data: data}
	messages := tail.Messages
	if tail.HasMoreBefore {
		// The tail's last message is read again with the pages: its body
		// is done with (Data is a copy).
		putBody(tail.body)
		if messages, out.bodies, err = c.pages(ctx, id, 0, int64(len(data)), maxBytes); err != nil {
			return Export{}, err
		}
	} else {
		out.bodies = []*[]byte{tail.body}
	}
	return out.assemble(messages, maxBytes, doc)
}

// assemble sets the export's messages and its document's size, and builds
// the document with doc. Without, only the document's head is built (data
// without messages, which checks data as building the document would):
// the messages stay where they are, and the size is what the document's
// would be.
func (out Export) assemble(messages []json.RawMessage, maxBytes int64, doc bool) (Export, error) {
	var built []byte
	var err error
	if doc {
		built, err = assemble(out.Data, out.From, messages)
		out.Size = int64(len(built))
	} else {
		built, err = assemble(out.Data, out.From, nil)
		out.Size = int64(len(built))
		for i, m := range messages {
			out.Size += int64(len(m))
			if i > 0 || out.From > 0 {
				out.Size++ // the comma before it
			}
		}
		built = nil
	}
	if err != nil {
		return Export{}, &Error{Method: MethodGetThreadTail, kind: ErrBadDocument, detail: err.Error()}
	}
	if out.Size > maxBytes {
		return Export{}, &Error{Method: MethodGetThreadTail, kind: ErrTooLarge, detail: fmt.Sprintf("thread larger than %d bytes", maxBytes)}
	}
	out.Doc, out.Messages = built, messages
	return out, nil
}

// Parse reads the thread (or window) the export holds, as its document
// would read, without building the document.
func (out Export) Parse(p *thread.Parser) (*thread.Thread, error) {
	return thread.ParseParts(p, out.Data, out.From, out.Messages)
}

// parseFrom reads the export's messages from index from on as a window
// (from is at least out.From).
func (out Export) parseFrom(p *thread.Parser, from int) (*thread.Thread, error) {
	return thread.ParseParts(p, out.Data, from, out.Messages[from-out.From:])
}

// pages returns the thread's messages from index from to its end, page by
// page, and the buffers they lie in; size is what the document holds
// besides them, for the bound.
func (c *Client) pages(ctx context.Context, id string, from int, size, maxBytes int64) (messages []json.RawMessage, bodies []*[]byte, err error) {
	defer func() {
		if err != nil {
			for _, b := range bodies {
				putBody(b)
			}
			bodies = nil
		}
	}()
	for pages := 0; ; pages++ {
		if pages >= maxPages {
			return nil, bodies, &Error{Method: MethodGetThreadMessagesPage, kind: ErrBadDocument, detail: "too many pages"}
		}
		p, err := c.GetThreadMessagesPage(ctx, id, from, PageSize)
		if err != nil {
			return nil, bodies, err
		}
		if p.body != nil {
			bodies = append(bodies, p.body)
		}
		for _, m := range p.Messages {
			size += int64(len(m)) + 1
		}
		if size > maxBytes {
			return nil, bodies, &Error{Method: MethodGetThreadMessagesPage, kind: ErrTooLarge,
				detail: fmt.Sprintf("thread larger than %d bytes", maxBytes)}
		}
		messages = append(messages, p.Messages...)
		if p.NextMessageIndex == nil {
			return messages, bodies, nil
		}
		from = *p.NextMessageIndex
	}
}

// ExportFrom fetches a thread's record and its messages from index from on
// (from > 0): its window. Its document (not built: Parse reads the parts)
// is the thread's with its first from messages left out, each by a null
// that keeps the places (a reader of the document skips entries that are
// not objects and counts their places), so that messages keep their
// indexes. The record comes from getThreadTail with limit 1, the messages
// from getThreadMessagesPage from from on: pages are addressed by index,
// as a whole read's are, so the window holds the messages a whole read
// holds at their places. (A longer tail would save a request, but its
// messages carry no index: a tail out of order, or one that does not
// start where it should, cannot be told from the thread.)
func (c *Client) ExportFrom(ctx context.Context, id string, from int, maxBytes int64) (Export, error) {
	tail, err := c.GetThreadTail(ctx, id, 1)
	if err != nil {
		return Export{}, err
	}
	data := bytes.TrimSpace(tail.Thread.Data)
	if len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}' {
		putBody(tail.body)
		return Export{}, &Error{Method: MethodGetThreadTail, kind: ErrBadDocument, detail: "thread.data is not an object"}
	}
	var head struct {
		V Version `json:"v"`
	}
	_ = json.Unmarshal(data, &head)
	ex := Export{V: int64(head.V), CreatorUserID: tail.Thread.CreatorUserID, UpdatedAt: int64(tail.Thread.UpdatedAt), Data: data, From: from}
	messages := tail.Messages
	if !tail.HasMoreBefore {
		// The whole thread, one message at most: its messages from from.
		messages = messages[min(from, len(messages)):]
		ex.bodies = []*[]byte{tail.body}
	} else {
		putBody(tail.body)
		if messages, ex.bodies, err = c.pages(ctx, id, from, int64(len(data))+int64(from)*5, maxBytes); err != nil {
			return Export{}, err
		}
	}
	return ex.assemble(messages, maxBytes, false)
}

// assemble builds the document as the CLI does ({...data, messages}): the
// members of the object data in their order, without any "messages" key
// of its own, then "messages" set to messages.
func assemble(data []byte, from int, messages []json.RawMessage) ([]byte, error) {
	n := len(data) + 16 + 5*from
	for _, m := range messages {
		n += len(m) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return nil, fmt.Errorf("thread.data: %w", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("thread.data: %w", err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("thread.data: %w", err)
		}
		if key == "messages" {
			continue
		}
		k, _ := json.Marshal(key)
		out = append(out, k...)
		out = append(out, ':')
		out = append(out, val...)
		out = append(out, ',')
	}
	out = append(out, `"messages":[`...)
	for i := range from {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, "null"...)
	}
	for i, m := range messages {
		if i > 0 || from > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	return append(out, "]}"...), nil
}

// CostParams are threadDisplayCostInfo's parameters.
type CostParams struct {
	ThreadID string `json:"threadID"`
	// Start and End bound the bill to a period (ISO datetimes, End
	// exclusive); without them it is the whole thread's.
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
}

// CostInfo is what Amp bills for a thread and the user's entitlement.
type CostInfo struct {
	TotalCostUSD  *float64 `json:"totalCostUSD"`
	CostBreakdown *struct {
		FreeUSD         *float64 `json:"freeUSD"`
		PaidUSD         *float64 `json:"paidUSD"`
		SubscriptionUSD *float64 `json:"subscriptionUSD"`
	} `json:"costBreakdown"`
	Entitlement *Entitlement `json:"entitlement"`
}

// Entitlement is the user's current entitlement window.
type Entitlement struct {
	RemainingUSD          *float64 `json:"remainingUSD"`
	LimitUSD              *float64 `json:"limitUSD"`
	PercentUsed           *float64 `json:"percentUsed"`
	WindowPeriod          string   `json:"windowPeriod"`
	WindowResetsInSeconds *float64 `json:"windowResetsInSeconds"`
}

// ThreadDisplayCostInfo returns what Amp bills for the thread.
func (c *Client) ThreadDisplayCostInfo(ctx context.Context, id string) (CostInfo, error) {
	var ci CostInfo
	err := c.Call(ctx, MethodThreadDisplayCostInfo, CostParams{ThreadID: id}, &ci)
	return ci, err
}

// ThreadDisplayCostInfoWithin returns what Amp bills for the thread within
// [start, end).
func (c *Client) ThreadDisplayCostInfoWithin(ctx context.Context, id string, start, end time.Time) (CostInfo, error) {
	var ci CostInfo
	err := c.Call(ctx, MethodThreadDisplayCostInfo, CostParams{ThreadID: id, Start: isoTime(start), End: isoTime(end)}, &ci)
	return ci, err
}

// isoTime is t as JavaScript's toISOString writes it (UTC, milliseconds),
// the form the server's schema is sure to take.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Version is a thread's `v`: a number, tolerated as a numeric string.
type Version int64

// UnmarshalJSON accepts a number or a numeric string; anything else is 0.
func (v *Version) UnmarshalJSON(b []byte) error {
	*v = Version(number(b))
	return nil
}

// Time is an epoch-ms time given as a number or an ISO string.
type Time int64

// UnmarshalJSON accepts epoch ms (number or numeric string) or RFC 3339;
// anything else is 0.
func (t *Time) UnmarshalJSON(b []byte) error {
	*t = Time(number(b))
	if *t == 0 && len(b) > 2 && b[0] == '"' {
		var s string
		if json.Unmarshal(b, &s) == nil {
			if ts, err := parseTime(s); err == nil {
				*t = Time(ts.UnixMilli())
			}
		}
	}
	return nil
}

func number(b []byte) int64 {
	s := string(bytes.Trim(bytes.TrimSpace(b), `"`))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= -9e18 && f <= 9e18 {
		return int64(f)
	}
	return 0
}

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }
