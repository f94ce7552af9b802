package app

import (
	"bufio"
	"encoding/json"
	"net/http"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/spend"
	"github.com/amp-exporter/amp-exporter/ledger"
)

// The JSON endpoints (docs/api.md).
const (
	// LedgerPath serves the usage ledger (`report --exporter`).
	LedgerPath = "/api/ledger"
	// SpendPath serves today's, the last 7 days' and this month's spend
	// (`statusline`).
	SpendPath = "/api/spend"
)

// LedgerJSONVersion is the version of /api/ledger's JSON; a field is
// never renamed or given another meaning without a new version.
const LedgerJSONVersion = 1

// maxLedgerRequests bounds the /api/ledger responses written at once
// (each copies the whole ledger), whatever --web.max-requests says.
const maxLedgerRequests = 2

// LedgerReader reads the usage ledger the exporter keeps.
type LedgerReader interface {
	// Ledger returns every row: a copy, the caller's to keep.
	Ledger() []ledger.Entry
	// Bills returns what the Amp server billed per thread and day; nil
	// when the exporter asks for no bills (billed USD is then unknown,
	// not zero).
	Bills() []ledger.Bill
}

// spendInputs is what the spend summary reads besides the ledger.
type spendInputs struct {
	ledger LedgerReader
	// zone is the zone days are taken in (ledger.timezone).
	zone func() *time.Location
	// entitlement is the Amp account's window, nil when unknown.
	entitlement func() *spend.Entitlement
	now         func() time.Time
}

// summary sums the ledger now.
func (in spendInputs) summary() spend.Summary {
	bills := in.ledger.Bills()
	s := spend.Input{Entries: in.ledger.Ledger(), Bills: bills, BillsKnown: bills != nil, Location: in.zone(), Now: in.now()}
	if in.entitlement != nil {
		s.Entitlement = in.entitlement()
	}
	return spend.Summarize(s)
}

// readOnly answers 405 to anything but GET and HEAD.
func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "Use GET.", http.StatusMethodNotAllowed)
	return false
}

func jsonHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

// ledgerHandler serves {"version":1,"entries":[…],"bills":[…]}, written
// row by row: the response holds no second copy of the ledger.
func ledgerHandler(in spendInputs) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !readOnly(w, r) {
			return
		}
		jsonHeaders(w)
		if r.Method == http.MethodHead {
			return
		}
		entries, bills := in.ledger.Ledger(), in.ledger.Bills()
		bw := bufio.NewWriterSize(w, 64<<10)
		_, _ = bw.WriteString(`{"version":1,"entries":[`)
		for i := range entries {
			if !writeRow(bw, i, &entries[i]) {
				return
			}
		}
		_, _ = bw.WriteString(`],"bills":[`)
		for i := range bills {
			if !writeRow(bw, i, &bills[i]) {
				return
			}
		}
		_, _ = bw.WriteString("]}\n")
		_ = bw.Flush()
	})
}

// writeRow writes one row of a list; false once the client is gone.
func writeRow(bw *bufio.Writer, i int, row any) bool {
	b, err := json.Marshal(row)
	if err != nil {
		return false // not for these types: ints and strings only
	}
	if i > 0 {
		_ = bw.WriteByte(',')
	}
	_, err = bw.Write(b)
	return err == nil
}

// spendHandler serves the summary the statusline prints.
func spendHandler(in spendInputs) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !readOnly(w, r) {
			return
		}
		jsonHeaders(w)
		if r.Method == http.MethodHead {
			return
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(in.summary().JSON())
	})
}
