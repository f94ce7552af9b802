package ampserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
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
	return out.Threads, nil
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
}

// GetThreadTail returns the thread's record (its document without
// messages in Thread.Data) and its last limit messages (1–500).
func (c *Client) GetThreadTail(ctx context.Context, id string, limit int) (Tail, error) {
	var t Tail
	err := c.Call(ctx, MethodGetThreadTail, map[string]any{"thread": id, "limit": limit}, &t)
	return t, err
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
}

// GetThreadMessagesPage returns up to limit (1–500) messages from index
// from of the thread's messages. A page must continue exactly where it
// says: when NextMessageIndex is set it equals from+len(Messages) and the
// page is not empty, else the answer is an ErrBadDocument (overlapping or
// skipping pages would count messages twice or lose them).
func (c *Client) GetThreadMessagesPage(ctx context.Context, id string, from, limit int) (Page, error) {
	var p Page
	if err := c.Call(ctx, MethodGetThreadMessagesPage, map[string]any{"thread": id, "fromIndex": from, "limit": limit}, &p); err != nil {
		return p, err
	}
	if n := p.NextMessageIndex; n != nil && (*n != from+len(p.Messages) || len(p.Messages) == 0) {
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

// Export is a whole thread as ExportThread assembles it.
type Export struct {
	// Doc is the thread document with all its messages: the shape of a
	// local thread file.
	Doc []byte
	// V is the document's `v` as the tail gave it (0 when missing).
	V int64
	// CreatorUserID and UpdatedAt (epoch ms) are the record header's.
	CreatorUserID string
	UpdatedAt     int64
}

// ExportThread fetches a whole thread the way `amp threads export` does:
// the tail with limit 1, then, when there are earlier messages, every page
// from index 0. The document is the header's `data` with `messages` set to
// the messages fetched (replacing any `messages` key `data` has). The
// version is `v` as the tail gave it (the document may have grown while it
// was paged; that is picked up at the next sync). maxBytes bounds the
// assembled document.
func (c *Client) ExportThread(ctx context.Context, id string, maxBytes int64) (Export, error) {
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
	out := Export{V: int64(head.V), CreatorUserID: tail.Thread.CreatorUserID, UpdatedAt: int64(tail.Thread.UpdatedAt)}
	messages := tail.Messages
	if tail.HasMoreBefore {
		messages = messages[:0:0]
		var size int64
		from := 0
		for pages := 0; ; pages++ {
			if pages >= maxPages {
				return Export{}, &Error{Method: MethodGetThreadMessagesPage, kind: ErrBadDocument, detail: "too many pages"}
			}
			p, err := c.GetThreadMessagesPage(ctx, id, from, PageSize)
			if err != nil {
				return Export{}, err
			}
			for _, m := range p.Messages {
				size += int64(len(m)) + 1
			}
			if size+int64(len(data)) > maxBytes {
				return Export{}, &Error{Method: MethodGetThreadMessagesPage, kind: ErrTooLarge,
					detail: fmt.Sprintf("thread larger than %d bytes", maxBytes)}
			}
			messages = append(messages, p.Messages...)
			if p.NextMessageIndex == nil {
				break
			}
			from = *p.NextMessageIndex
		}
	}
	doc, err := assemble(data, messages)
	if err != nil {
		return Export{}, &Error{Method: MethodGetThreadTail, kind: ErrBadDocument, detail: err.Error()}
	}
	if int64(len(doc)) > maxBytes {
		return Export{}, &Error{Method: MethodGetThreadTail, kind: ErrTooLarge, detail: fmt.Sprintf("thread larger than %d bytes", maxBytes)}
	}
	out.Doc = doc
	return out, nil
}

// assemble builds the document as the CLI does ({...data, messages}): the
// members of the object data in their order, without any "messages" key
// of its own, then "messages" set to messages.
func assemble(data []byte, messages []json.RawMessage) ([]byte, error) {
	n := len(data) + 16
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
	for i, m := range messages {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	return append(out, "]}"...), nil
}

// CostParams are threadDisplayCostInfo's parameters.
type CostParams struct {
	ThreadID string `json:"threadID"`
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
