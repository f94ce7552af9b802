package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/amp-exporter/amp-exporter/ledger"
)

// An exporter's ledger is read within what a real one can be. The 30,000
// generated threads of four weeks make 32,217 rows, 7.57 MB of JSON (235
// bytes a row); a row's strings are label values (at most 128 bytes) and
// a thread id.
const (
	// maxLedgerBytes bounds the whole answer: a hundred times that month.
	maxLedgerBytes = 1 << 30
	// maxLedgerRows bounds the rows and bills kept (rows of one key are
	// one): 130 times that month's.
	maxLedgerRows = 1 << 22
	// maxLedgerValueBytes bounds one row, one bill, or any one value of
	// the answer, as the decoder holds it.
	maxLedgerValueBytes = 64 << 10
)

// ledgerLimits are the bounds of readLedger.
type ledgerLimits struct {
	bytes, value int64
	rows         int
}

// ledgerJSON is /api/ledger's body (the reference readLedger's fuzz test
// compares with).
type ledgerJSON struct {
	Version int           `json:"version"`
	Entries []Entry       `json:"entries"`
	Bills   []ledger.Bill `json:"bills"`
	// Coarsened is absent from an exporter older than the field.
	Coarsened []ledger.Span `json:"coarsened"`
}

// errVersion is a ledger of another version than ledgerVersion.
type errVersion int

func (v errVersion) Error() string {
	return fmt.Sprintf("it serves a ledger of version %d; this amp-exporter reads version %d (use the same release of both)", int(v), ledgerVersion)
}

// readLedger reads /api/ledger's body {"version":1,"entries":[…],
// "bills":[…],"coarsened":[…]} one row at a time, adding each to the ledger as it comes:
// what it holds is the ledger's distinct rows, never the answer's list of
// them (an answer of a million {} is one row). Fields it does not know
// are skipped, as encoding/json skips them; names match as encoding/json
// matches them (case folded).
func readLedger(r io.Reader, lim ledgerLimits) (*Ledger, []ledger.Bill, error) {
	body := &boundedBody{r: io.LimitReader(r, lim.bytes+1), lim: lim}
	dec := json.NewDecoder(body)
	body.dec = dec
	rd := ledgerReader{dec: dec, lim: lim, l: NewLedger()}
	if err := rd.read(); err != nil {
		if body.err != nil {
			err = body.err
		}
		return nil, nil, err
	}
	rd.l.AddSorted(rd.sorted)
	rd.l.coarsened = rd.coarsened
	return rd.l, rd.bills, nil
}

// ledgerReader is readLedger's state.
type ledgerReader struct {
	dec *json.Decoder
	lim ledgerLimits
	l   *Ledger
	// sorted are the rows that came in the order of ledger.Compare (as an
	// exporter writes them), kept as a list: a map entry per row costs
	// twice the memory. Rows out of that order go to l.
	sorted []Entry
	bills  []ledger.Bill
	// coarsened are the stretches the exporter coarsened its ledger over
	// (absent from an exporter older than the field).
	coarsened []ledger.Span
	// row and bill are decoded into, one for all: a value of its own
	// would be an allocation a row.
	row  Entry
	bill ledger.Bill
}

func (rd *ledgerReader) read() error {
	if err := rd.delim('{'); err != nil {
		return err
	}
	seen := map[string]bool{}
	version := 0
	for rd.dec.More() {
		tok, err := rd.dec.Token()
		if err != nil {
			return notRead(err)
		}
		name, _ := tok.(string)
		var field string
		for _, f := range []string{"version", "entries", "bills", "coarsened"} {
			if strings.EqualFold(name, f) {
				field = f
			}
		}
		if field != "" {
			if seen[field] {
				return fmt.Errorf("the ledger does not read: %q twice", field)
			}
			seen[field] = true
		}
		switch field {
		case "version":
			if err := rd.dec.Decode(&version); err != nil {
				return notRead(err)
			}
			if version != ledgerVersion {
				return errVersion(version)
			}
		case "entries":
			err = rd.list(func() error {
				rd.row = Entry{}
				if err := rd.dec.Decode(&rd.row); err != nil {
					return err
				}
				return rd.add(rd.row)
			})
		case "bills":
			err = rd.list(func() error {
				rd.bill = ledger.Bill{}
				if err := rd.dec.Decode(&rd.bill); err != nil {
					return err
				}
				rd.bills = append(rd.bills, rd.bill)
				return rd.bound()
			})
		case "coarsened":
			err = rd.list(func() error {
				var sp ledger.Span
				if err := rd.dec.Decode(&sp); err != nil {
					return err
				}
				rd.coarsened = append(rd.coarsened, sp)
				return rd.bound()
			})
		default:
			err = rd.skip()
		}
		if err != nil {
			return notRead(err)
		}
	}
	if err := rd.delim('}'); err != nil {
		return err
	}
	if version != ledgerVersion {
		return errVersion(version)
	}
	return nil
}

// skip reads a value and keeps nothing of it, a token at a time: a field
// added to the ledger later, however long, costs no memory.
func (rd *ledgerReader) skip() error {
	depth := 0
	for {
		tok, err := rd.dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// list reads a JSON list (or null) with one calling each for every item.
func (rd *ledgerReader) list(each func() error) error {
	tok, err := rd.dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if tok != json.Delim('[') {
		return errors.New("not a list")
	}
	for rd.dec.More() {
		if err := each(); err != nil {
			return err
		}
	}
	_, err = rd.dec.Token() // ]
	return err
}

// add adds a row.
func (rd *ledgerReader) add(e Entry) error {
	if u := e.Usage; min(u.Input, u.Output, u.CacheCreation, u.CacheRead, u.Credits, u.Cost, u.Commits, u.PullRequests) < 0 {
		return errors.New("a row with negative usage")
	}
	n := len(rd.sorted)
	switch {
	case n == 0 || ledger.Compare(rd.sorted[n-1], e) < 0:
		rd.sorted = append(rd.sorted, e)
	case ledger.Compare(rd.sorted[n-1], e) == 0:
		rd.sorted[n-1].Add(e.Usage)
		return nil
	default:
		rd.l.Add(e)
	}
	return rd.bound()
}

// bound says whether the rows kept are still within the bound.
func (rd *ledgerReader) bound() error {
	if len(rd.sorted)+rd.l.rowCount()+len(rd.bills)+len(rd.coarsened) > rd.lim.rows {
		return &limitError{fmt.Sprintf("more than %d rows", rd.lim.rows)}
	}
	return nil
}

// delim reads the delimiter want.
func (rd *ledgerReader) delim(want json.Delim) error {
	tok, err := rd.dec.Token()
	if err != nil {
		return notRead(err)
	}
	if tok != want {
		return notRead(fmt.Errorf("%v where %v was expected", tok, want))
	}
	return nil
}

// notRead is the error of an answer that is not a ledger; a bound passed
// is said as such.
func notRead(err error) error {
	var le *limitError
	if errors.As(err, &le) {
		return le
	}
	return fmt.Errorf("the ledger does not read: %w", err)
}

// limitError is an answer past one of the bounds.
type limitError struct{ what string }

func (e *limitError) Error() string {
	return "its ledger is past what this report reads (" + e.what + "; is it an amp-exporter?)"
}

// boundedBody is the answer as the decoder reads it, within the bounds: the
// whole of it, and the bytes the decoder holds past the start of the value
// it is reading (its InputOffset), so that no one value (a row, a string)
// grows its buffer past lim.value.
type boundedBody struct {
	r    io.Reader
	dec  *json.Decoder
	lim  ledgerLimits
	read int64
	err  error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if held := b.read - b.dec.InputOffset(); held > b.lim.value {
		b.err = &limitError{fmt.Sprintf("a value over %d bytes", b.lim.value)}
		return 0, b.err
	}
	// Read no further than a value may reach, so the check above sees it.
	if room := b.lim.value + 1 - (b.read - b.dec.InputOffset()); int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > b.lim.bytes {
		b.err = &limitError{fmt.Sprintf("over %d bytes", b.lim.bytes)}
		return 0, b.err
	}
	return n, err
}
