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
	Email string `json:"email"`
}

// maxEmail bounds the account name (an address has at most 254 bytes):
// it is logged and shown on the landing page.
const maxEmail = 254

// GetUserInfo checks the key and names the account.
func (c *Client) GetUserInfo(ctx context.Context) (UserInfo, error) {
	var u UserInfo
	err := c.Call(ctx, MethodGetUserInfo, nil, &u)
	u.Email = bounded(u.Email, maxEmail)
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

// Tail is getThreadTail's result.
type Tail struct {
	Thread        json.RawMessage   `json:"thread"`
	Messages      []json.RawMessage `json:"messages"`
	HasMoreBefore bool              `json:"hasMoreBefore"`
}

// GetThreadTail returns the thread without its messages and its last limit
// messages.
func (c *Client) GetThreadTail(ctx context.Context, id string, limit int) (Tail, error) {
	var t Tail
	err := c.Call(ctx, MethodGetThreadTail, map[string]any{"thread": id, "limit": limit}, &t)
	return t, err
}

// Page is getThreadMessagesPage's result.
type Page struct {
	Messages         []json.RawMessage `json:"messages"`
	NextMessageIndex *int              `json:"nextMessageIndex"`
}

// GetThreadMessagesPage returns up to limit messages from fromIndex.
func (c *Client) GetThreadMessagesPage(ctx context.Context, id string, from, limit int) (Page, error) {
	var p Page
	err := c.Call(ctx, MethodGetThreadMessagesPage, map[string]any{"thread": id, "fromIndex": from, "limit": limit}, &p)
	return p, err
}

// PageSize is how many messages one getThreadMessagesPage asks for, as the
// CLI's export does.
const PageSize = 200

// maxPages bounds the pages of one thread (a server that never ends the
// paging must not keep the exporter busy for ever).
const maxPages = 10000

// ExportThread fetches a whole thread document the way `amp threads export`
// does: the tail with limit 1, then, when there are earlier messages, every
// page from index 0. The result has the shape of a local thread file. The
// version returned is the thread's `v` as the tail gave it (the document
// may have grown while it was paged; that is picked up at the next sync).
// maxBytes bounds the assembled document.
func (c *Client) ExportThread(ctx context.Context, id string, maxBytes int64) ([]byte, int64, error) {
	tail, err := c.GetThreadTail(ctx, id, 1)
	if err != nil {
		return nil, 0, err
	}
	thread := bytes.TrimSpace(tail.Thread)
	if len(thread) < 2 || thread[0] != '{' || thread[len(thread)-1] != '}' {
		return nil, 0, &Error{Method: MethodGetThreadTail, kind: ErrBadResponse, detail: "thread is not an object"}
	}
	var head struct {
		V Version `json:"v"`
	}
	_ = json.Unmarshal(thread, &head)
	messages := tail.Messages
	if tail.HasMoreBefore {
		messages = messages[:0:0]
		var size int64
		from := 0
		for pages := 0; ; pages++ {
			if pages >= maxPages {
				return nil, 0, &Error{Method: MethodGetThreadMessagesPage, kind: ErrBadResponse, detail: "too many pages"}
			}
			p, err := c.GetThreadMessagesPage(ctx, id, from, PageSize)
			if err != nil {
				return nil, 0, err
			}
			for _, m := range p.Messages {
				size += int64(len(m)) + 1
			}
			if size+int64(len(thread)) > maxBytes {
				return nil, 0, &Error{Method: MethodGetThreadMessagesPage, kind: ErrTooLarge,
					detail: fmt.Sprintf("thread larger than %d bytes", maxBytes)}
			}
			messages = append(messages, p.Messages...)
			if p.NextMessageIndex == nil {
				break
			}
			if *p.NextMessageIndex <= from {
				return nil, 0, &Error{Method: MethodGetThreadMessagesPage, kind: ErrBadResponse, detail: "nextMessageIndex does not advance"}
			}
			from = *p.NextMessageIndex
		}
	}
	doc := assemble(thread, messages)
	if int64(len(doc)) > maxBytes {
		return nil, 0, &Error{Method: MethodGetThreadTail, kind: ErrTooLarge, detail: fmt.Sprintf("thread larger than %d bytes", maxBytes)}
	}
	return doc, int64(head.V), nil
}

// assemble sets "messages" on the thread object. The thread object from
// getThreadTail carries no messages; if it does, the parser takes the
// last "messages" key, which is the one added here.
func assemble(thread []byte, messages []json.RawMessage) []byte {
	n := len(thread) + 16
	for _, m := range messages {
		n += len(m) + 1
	}
	out := make([]byte, 0, n)
	body := bytes.TrimSpace(thread[1 : len(thread)-1])
	out = append(out, '{')
	out = append(out, body...)
	if len(body) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"messages":[`...)
	for i, m := range messages {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	return append(out, "]}"...)
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
