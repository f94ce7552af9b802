package report

import (
	"context"
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

// LedgerURL is the ledger's URL on the exporter at base (its address, as
// http://localhost:9974, or the ledger's URL itself).
func LedgerURL(base string) (string, error) {
	x, err := parseExporterURL(base)
	if err != nil {
		return "", err
	}
	return x.ledger.String(), nil
}

// FetchLedger asks the exporter at base for its ledger and returns it as a
// Ledger (rows in the order Entries gives, whatever order the exporter
// wrote them in) and the bills. A user and password in the URL are sent
// as basic auth, and never printed: every error leaves here, naming the
// exporter as exporterURL shows it, scrubbed of the password.
func FetchLedger(ctx context.Context, client *http.Client, base string) (*Ledger, []ledger.Bill, error) {
	x, err := parseExporterURL(base)
	if err != nil {
		return nil, nil, err
	}
	l, bills, err := fetchLedger(ctx, client, x)
	if err != nil {
		return nil, nil, &exporterError{msg: x.scrub(fmt.Sprintf("exporter at %s: %v", x.shown, err)), err: err}
	}
	return l, bills, nil
}

// exporterError is an error of FetchLedger: its message scrubbed, what
// it wraps still matched by errors.Is (a cancelled context).
type exporterError struct {
	msg string
	err error
}

func (e *exporterError) Error() string { return e.msg }
func (e *exporterError) Unwrap() error { return e.err }

// fetchLedger is FetchLedger's request. Its errors follow "exporter at
// URL: " and never hold the URL.
func fetchLedger(ctx context.Context, client *http.Client, x exporterURL) (*Ledger, []ledger.Bill, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, x.ledger.String(), nil)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said once, as shown
		}
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		first, _, _ := strings.Cut(strings.TrimSpace(string(msg)), "\n")
		if resp.StatusCode == http.StatusNotFound {
			return nil, nil, fmt.Errorf("it has no %s (an amp-exporter older than this one?)", LedgerPath)
		}
		return nil, nil, fmt.Errorf("it answered %s: %s", resp.Status, first)
	}
	return readLedger(resp.Body, ledgerLimits{bytes: maxLedgerBytes, value: maxLedgerValueBytes, rows: maxLedgerRows})
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
