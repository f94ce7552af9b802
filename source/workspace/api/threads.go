package api

// NextCursorField is the listing's field naming the next page.
const NextCursorField = "nextCursor"

// maxCursorBytes bounds a cursor from the server.
const maxCursorBytes = 4096

var (
	pageFields    = []string{"threads", NextCursorField}
	threadFields  = []string{"id", "creatorUserID", "title", "createdAt", "updatedAt", "firstSyncedAt", "mainThreadID", "parentThreadID", "repositories", "subThreads"}
	repoFields    = []string{"url", "dir"}
	threadsPath   = "threads"
	threadRowPath = "threads[]"
)

// DecodeThreadPage decodes a page of GET /api/v2/threads. Rows without
// an id or a creatorUserID are skipped (counted); an absent, null or empty
// nextCursor ends the listing.
func DecodeThreadPage(b []byte) (ThreadPage, *Shape, error) {
	d := &dec{shape: newShape()}
	var page ThreadPage
	top, found, err := d.topLevel(b, pageFields, threadsPath, func(raw any) {
		if t, ok := d.thread(raw, threadRowPath, true); ok {
			page.Threads = append(page.Threads, t)
		}
	})
	if err != nil {
		return ThreadPage{}, d.shape, &AnswerError{Endpoint: EndpointThreads, Reason: ReasonUndecodable, Detail: err.Error()}
	}
	if !found {
		reason := ReasonMissingField
		if _, ok := top.m[threadsPath]; ok {
			reason = ReasonTypeMismatch
		}
		d.shape.add(reason, threadsPath)
		return ThreadPage{}, d.shape, &AnswerError{Endpoint: EndpointThreads, Field: threadsPath, Reason: reason}
	}
	if c, ok := top.str(NextCursorField, optional); ok {
		if len(c) > maxCursorBytes {
			d.shape.add(ReasonOutOfRange, NextCursorField)
		} else {
			page.NextCursor = c
		}
	}
	return page, d.shape, nil
}

// thread decodes a thread summary; nested summaries (row false) need only
// an id.
func (d *dec) thread(raw any, where string, row bool) (Thread, bool) {
	o, ok := d.object(raw, where, threadFields)
	if !ok {
		return Thread{}, false
	}
	var t Thread
	t.ID, ok = o.id("id", required)
	if !ok {
		return Thread{}, false
	}
	kind := required
	if !row {
		kind = optional
	}
	if t.CreatorUserID, ok = o.id("creatorUserID", kind); !ok && row {
		return Thread{}, false
	}
	t.MainThreadID, _ = o.id("mainThreadID", optional)
	t.ParentThreadID, _ = o.id("parentThreadID", optional)
	t.CreatedAt = o.time("createdAt")
	t.UpdatedAt = o.time("updatedAt")
	t.FirstSyncedAt = o.time("firstSyncedAt")
	if _, ok := o.m["title"]; ok {
		_, _ = o.str("title", optional) // checked for its type only: never kept
	}
	for _, it := range o.array("repositories", optional) {
		if u, ok := d.repository(it, o.path+"repositories[]"); ok && len(t.Repositories) < maxItems {
			t.Repositories = append(t.Repositories, u)
		}
	}
	if row {
		for _, it := range o.array("subThreads", optional) {
			if id, ok := d.subThreadID(it, o.path+"subThreads[]"); ok && len(t.SubThreadIDs) < maxItems {
				t.SubThreadIDs = append(t.SubThreadIDs, id)
			}
		}
	}
	return t, true
}

// repository reads a repositories item: {url, dir} or a URL.
func (d *dec) repository(raw any, where string) (string, bool) {
	if s, ok := raw.(string); ok {
		return d.boundedURL(s, where)
	}
	o, ok := d.object(raw, where, repoFields)
	if !ok {
		return "", false
	}
	u, ok := o.str("url", required)
	if !ok {
		return "", false
	}
	_, _ = o.str("dir", optional) // a path on someone's machine: never kept
	return d.boundedURL(u, where+".url")
}

func (d *dec) boundedURL(u, where string) (string, bool) {
	if u == "" || len(u) > maxURLBytes {
		d.shape.add(ReasonOutOfRange, where)
		return "", false
	}
	return u, true
}

// subThreadID reads a subThreads item: a nested summary or an id.
func (d *dec) subThreadID(raw any, where string) (string, bool) {
	if s, ok := raw.(string); ok {
		if !validID(s) {
			d.shape.add(ReasonOutOfRange, where)
			return "", false
		}
		return s, true
	}
	t, ok := d.thread(raw, where, false)
	return t.ID, ok
}
