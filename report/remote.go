package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/amp-exporter/amp-exporter/ledger"
)

// LedgerPath is where a running exporter serves its ledger.
const LedgerPath = "/api/ledger"

// ledgerVersion is the version of the ledger's JSON this report reads.
const ledgerVersion = 1

// maxLedgerBytes bounds what is read from an exporter (a year of heavy
// use is well under it).
const maxLedgerBytes = 4 << 30

// ledgerJSON is /api/ledger's body.
type ledgerJSON struct {
	Version int           `json:"version"`
	Entries []Entry       `json:"entries"`
	Bills   []ledger.Bill `json:"bills"`
	// Coarsened is absent from an exporter older than the field.
	Coarsened []ledger.Span `json:"coarsened"`
}

// LedgerURL is the ledger's URL on the exporter at base (its address, as
// http://localhost:9974, or the ledger's URL itself).
func LedgerURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an exporter's URL (want http://host:port)", redact(base))
	}
	if !strings.HasSuffix(u.Path, LedgerPath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + LedgerPath
	}
	return u.String(), nil
}

// redact keeps a password given in a URL out of messages.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(the URL)"
}

// FetchLedger asks the exporter at base for its ledger and returns it as a
// Ledger (rows in the order Entries gives, whatever order the exporter
// wrote them in) and the bills. A user and password in the URL are sent
// as basic auth.
func FetchLedger(ctx context.Context, client *http.Client, base string) (*Ledger, []ledger.Bill, error) {
	target, err := LedgerURL(base)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("exporter: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL, with its password, is said once below
		}
		return nil, nil, fmt.Errorf("exporter at %s: %w", redact(base), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		first, _, _ := strings.Cut(strings.TrimSpace(string(msg)), "\n")
		if resp.StatusCode == http.StatusNotFound {
			return nil, nil, fmt.Errorf("exporter at %s has no %s (an amp-exporter older than this one?)", redact(base), LedgerPath)
		}
		return nil, nil, fmt.Errorf("exporter at %s answered %s: %s", redact(base), resp.Status, first)
	}
	var body ledgerJSON
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxLedgerBytes))
	if err := dec.Decode(&body); err != nil {
		return nil, nil, fmt.Errorf("exporter at %s: the ledger does not read: %w", redact(base), err)
	}
	if body.Version != ledgerVersion {
		return nil, nil, fmt.Errorf("exporter at %s serves a ledger of version %d; this amp-exporter reads version %d (use the same release of both)",
			redact(base), body.Version, ledgerVersion)
	}
	l := NewLedger()
	for _, e := range body.Entries {
		l.Add(e)
	}
	l.coarsened = body.Coarsened
	return l, body.Bills, nil
}

// LeaveOutLater drops the rows of buckets that start after now, as a
// report read from the sources leaves out items stamped after now (a
// clock ahead, a bad timestamp), and returns what they held. A row of the
// bucket holding now is kept whole: the ledger does not say when in its
// 15 minutes its items are.
func LeaveOutLater(entries []Entry, now time.Time) (kept []Entry, later Usage) {
	at := now.UnixMilli()
	kept = entries[:0:0]
	for _, e := range entries {
		if e.Start != Undated && e.Start > at {
			later.Add(e.Usage)
			continue
		}
		kept = append(kept, e)
	}
	return kept, later
}
