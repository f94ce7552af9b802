package app

import (
	"bufio"
	"encoding/json"
	"net/http"
	"sync"
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

// Defaults of ledgerLimits. A client that stops reading holds its
// response's place (and its copy of the ledger) while a write waits for
// it: at most defaultLedgerStall, so that two such clients delay the
// others by about that long rather than locking them out until the
// server's 2-minute write timeout. A request finding both places taken
// waits for one rather than failing at once.
const (
	defaultLedgerStall    = 10 * time.Second
	defaultLedgerSlotWait = 30 * time.Second
)

// ledgerLimits bound /api/ledger's responses; zero fields take the
// defaults above.
type ledgerLimits struct {
	// stall is the longest one write may wait for the client to read;
	// then the response is cut and its place freed.
	stall time.Duration
	// slotWait is the longest a request waits for a place; then 503.
	slotWait time.Duration
}

func (l ledgerLimits) withDefaults() ledgerLimits {
	if l.stall <= 0 {
		l.stall = defaultLedgerStall
	}
	if l.slotWait <= 0 {
		l.slotWait = defaultLedgerSlotWait
	}
	return l
}

// LedgerReader reads the usage ledger the exporter keeps.
type LedgerReader interface {
	// Ledger returns every row: a copy, the caller's to keep.
	Ledger() []ledger.Entry
	// LedgerBetween returns the rows of the buckets that start in
	// [from, to) (epoch ms).
	LedgerBetween(from, to int64) []ledger.Entry
	// Bills returns what the Amp server billed per thread and day; nil
	// when the exporter asks for no bills (billed USD is then unknown,
	// not zero).
	Bills() []ledger.Bill
	// LedgerCoarsened returns the stretches of time some long thread's
	// rows were merged over to keep it within its bound (ledger.Span):
	// within hours and days of ledger.timezone, so its days are exact.
	LedgerCoarsened() []ledger.Span
	// Generation changes whenever the ledger or the bills may have: a
	// summary made at one generation holds until it moves.
	Generation() uint64
}

// spendInputs is what the spend summary reads besides the ledger.
type spendInputs struct {
	ledger LedgerReader
	// zone is the zone days are taken in (ledger.timezone).
	zone func() *time.Location
	// entitlement is the Amp account's window, nil when unknown.
	entitlement func() *spend.Entitlement
	now         func() time.Time
	// cache keeps the last summary: summing the ledger copies all of it
	// (tens of milliseconds at 30,000 threads), and a prompt asks for it
	// far more often than the ledger changes.
	cache *spendCache
}

// spendCache is the last summary and what it was made from.
type spendCache struct {
	// making is held while a summary is made: one at a time, and a
	// request that waited finds the one made meanwhile.
	making sync.Mutex

	mu         sync.Mutex
	key        spendKey
	sum        spend.Summary
	ok         bool
	refreshing bool // a summary is being made in the background
}

// spendKey is what a summary depends on: the ledger's generation, the
// zone and the day it is made on (the periods move at midnight).
type spendKey struct {
	generation uint64
	zone       *time.Location
	day        string
}

// summary sums the ledger as it is now, or returns the summary made since
// it last changed; the entitlement and the time are always current.
//
// With stale (/api/spend, for prompts that must not wait), a summary of
// the same zone and day made before the ledger's last change is returned
// at once while a new one is made in the background: the line is at most
// one summary behind (about 0.2 s of work at 30,000 threads on a busy
// machine), never missing.
func (in spendInputs) summary(stale bool) spend.Summary {
	now, zone := in.now(), in.zone()
	if zone == nil {
		zone = time.Local // before the ledger step first applied
	}
	key := spendKey{generation: in.ledger.Generation(), zone: zone, day: now.In(zone).Format(time.DateOnly)}
	s, ok := in.cached(key, stale)
	if !ok {
		s = in.make(key, now)
	}
	s.Now = now
	if in.entitlement != nil {
		s.Entitlement = in.entitlement()
	}
	return s
}

// cached returns the summary kept for key (or, with stale, an older one
// of its zone and day, starting a new one in the background).
func (in spendInputs) cached(key spendKey, stale bool) (spend.Summary, bool) {
	c := in.cache
	if c == nil {
		return spend.Summary{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok {
		return spend.Summary{}, false
	}
	if c.key == key {
		return c.sum, true
	}
	if stale && c.key.zone == key.zone && c.key.day == key.day {
		if !c.refreshing {
			c.refreshing = true
			go func() {
				defer func() { c.mu.Lock(); c.refreshing = false; c.mu.Unlock() }()
				in.make(key, in.now())
			}()
		}
		return c.sum, true
	}
	return spend.Summary{}, false
}

// make sums the ledger for key and keeps the summary.
func (in spendInputs) make(key spendKey, now time.Time) spend.Summary {
	if c := in.cache; c != nil {
		c.making.Lock()
		defer c.making.Unlock()
		c.mu.Lock()
		done := c.ok && c.key == key
		s := c.sum
		c.mu.Unlock()
		if done {
			return s // made while this one waited
		}
	}
	bills := in.ledger.Bills()
	from, to := spend.Window(now, key.zone) // a year of history is not copied for a month's figures
	s := spend.Summarize(spend.Input{Entries: in.ledger.LedgerBetween(from, to), Bills: bills, BillsKnown: bills != nil, Location: key.zone, Now: now,
		Coarsened: in.ledger.LedgerCoarsened()})
	if c := in.cache; c != nil {
		c.mu.Lock()
		c.key, c.sum, c.ok = key, s, true
		c.mu.Unlock()
	}
	return s
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

// ledgerHandler serves {"version":1,"entries":[…],"bills":[…],
// "coarsened":[…]}, written row by row: the response holds no second copy
// of the ledger. Every write must be taken by the client within stall
// (progressWriter).
func ledgerHandler(in spendInputs, stall time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !readOnly(w, r) {
			return
		}
		jsonHeaders(w)
		if r.Method == http.MethodHead {
			return
		}
		entries, bills, coarsened := in.ledger.Ledger(), in.ledger.Bills(), in.ledger.LedgerCoarsened()
		pw := newProgressWriter(w, stall)
		defer pw.flush()
		bw := bufio.NewWriterSize(pw, 64<<10)
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
		// A field added to version 1: a report that does not know it
		// reads the rest as before.
		_, _ = bw.WriteString(`],"coarsened":[`)
		for i := range coarsened {
			if !writeRow(bw, i, &coarsened[i]) {
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
		_ = enc.Encode(in.summary(true).JSON())
	})
}
