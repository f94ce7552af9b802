package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/ledger"
)

// hostileLedger is an answer of n empty rows: {},{},… (3 bytes each).
func hostileLedger(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":1,"entries":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{}`)
	}
	b.WriteString(`],"bills":[]}`)
	return b.Bytes()
}

// An answer of millions of empty rows costs about what it weighs, not a
// hundred times that: rows are added up as they are read, never held as a
// list first. The measure is what reading it allocates, against its size
// (the same in any run, whatever the machine's load).
func TestFetchLedgerHostileAnswerCostsItsSize(t *testing.T) {
	body := hostileLedger(1 << 20) // 3 MB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	l, _, err := FetchLedger(context.Background(), srv.Client(), srv.URL)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(l.Entries()); n != 1 {
		t.Errorf("%d rows, want the one they add up to", n)
	}
	ratio := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(body))
	t.Logf("%d bytes of answer: %.1f bytes allocated a byte", len(body), ratio)
	if ratio > 1 {
		t.Errorf("reading %d bytes allocated %.1f bytes a byte, want at most 1", len(body), ratio)
	}
}

// readLedger reads /api/ledger's answer row by row within its bounds: an
// answer past one is refused, naming the bound; rows of one key are added
// up, in whatever order they come; fields it does not know are skipped.
func TestReadLedger(t *testing.T) {
	lim := ledgerLimits{bytes: 1000, value: 120, rows: 3}
	row := func(start int64, session string, input int64) string {
		return fmt.Sprintf(`{"start":%d,"session":%q,"model":"m","input":%d}`, start, session, input)
	}
	tests := []struct {
		name    string
		body    string
		entries []Entry
		bills   []ledger.Bill
		err     string
	}{
		{"rows and bills", `{"version":1,"entries":[` + row(1800000900000, "T-b", 2) + `,` + row(1800000000000, "T-a", 1) + `,` + row(1800000900000, "T-b", 3) +
			`],"bills":[{"start":1,"end":2,"session":"T-a","usd":7}]}`,
			[]Entry{{Start: 1800000000000, Session: "T-a", Model: "m", Usage: Usage{Input: 1}}, {Start: 1800000900000, Session: "T-b", Model: "m", Usage: Usage{Input: 5}}},
			[]ledger.Bill{{Start: 1, End: 2, Session: "T-a", USD: 7}}, ""},
		{"unknown fields skipped", `{"version":1,"later":{"a":[1,{"b":null}]},"entries":[{"start":1,"session":"s","model":"m","input":1,"new":"x"}],"more":"x"}`,
			[]Entry{{Start: 1, Session: "s", Model: "m", Usage: Usage{Input: 1}}}, nil, ""},
		{"null lists", `{"version":1,"entries":null,"bills":null}`, nil, nil, ""},
		{"rows of one key are one row", `{"version":1,"entries":[{},{},{},{},{},{},{},{},{},{}]}`, []Entry{{}}, nil, ""},
		{"sums saturate", `{"version":1,"entries":[` + row(1, "s", math.MaxInt64) + `,` + row(1, "s", 1) + `]}`,
			[]Entry{{Start: 1, Session: "s", Model: "m", Usage: Usage{Input: math.MaxInt64}}}, nil, ""},
		{"version", `{"version":2,"entries":[` + row(1, "s", 1) + `]}`, nil, nil, "version 2; this amp-exporter reads version 1"},
		{"no version", `{"entries":[]}`, nil, nil, "version 0"},
		{"version twice", `{"version":1,"version":1,"entries":[]}`, nil, nil, `"version" twice`},
		{"not an object", `[]`, nil, nil, "does not read"},
		{"not json", `<html>`, nil, nil, "does not read"},
		{"cut short", `{"version":1,"entries":[{}`, nil, nil, "does not read"},
		{"negative usage", `{"version":1,"entries":[` + row(1, "s", -1) + `]}`, nil, nil, "negative"},
		{"too many rows", `{"version":1,"entries":[` + row(1, "a", 1) + `,` + row(2, "b", 1) + `,` + row(3, "c", 1) + `,` + row(4, "d", 1) + `]}`,
			nil, nil, "more than 3 rows"},
		{"too many with bills", `{"version":1,"entries":[` + row(1, "a", 1) + `,` + row(2, "b", 1) + `],"bills":[{},{}]}`, nil, nil, "more than 3 rows"},
		{"a row too long", `{"version":1,"entries":[{"session":"` + strings.Repeat("x", 200) + `"}]}`, nil, nil, "a value over 120 bytes"},
		{"a field too long", `{"version":1,"x":"` + strings.Repeat("x", 200) + `"}`, nil, nil, "a value over 120 bytes"},
		{"too long", `{"version":1,"entries":[` + strings.Repeat(`{},`, 400) + `{}]}`, nil, nil, "over 1000 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, bills, err := readLedger(strings.NewReader(tt.body), lim)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Entries(); !reflect.DeepEqual(got, tt.entries) && (len(got) != 0 || len(tt.entries) != 0) {
				t.Errorf("entries %+v, want %+v", got, tt.entries)
			}
			if !reflect.DeepEqual(bills, tt.bills) && (len(bills) != 0 || len(tt.bills) != 0) {
				t.Errorf("bills %+v, want %+v", bills, tt.bills)
			}
		})
	}
}

// FuzzReadLedger: whatever the answer, reading it does not panic, keeps
// its bounds, and what it reads is what decoding the whole answer at once
// (as the report did before it read row by row) gives.
func FuzzReadLedger(f *testing.F) {
	f.Add(`{"version":1,"entries":[{"start":1,"session":"s","model":"m","input":1},{"start":1,"session":"s","model":"m","cost":2}],"bills":[{"usd":1}]}`)
	f.Add(`{"version":1,"entries":[{},{},{}]}`)
	f.Add(`{"Version":1,"ENTRIES":[{"Start":1}],"x":[[{}]]}`)
	f.Add(`{"version":1,"entries":null}`)
	f.Add(`{"version":1,"entries":[],"bills":[],"coarsened":[{"start":1,"end":2},{"start":3}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		lim := ledgerLimits{bytes: 4096, value: 512, rows: 16}
		l, bills, err := readLedger(strings.NewReader(body), lim)
		if err != nil {
			return
		}
		if n := len(l.Entries()) + len(bills) + len(l.Coarsened()); n > lim.rows {
			t.Fatalf("%d rows kept, bound %d", n, lim.rows)
		}
		var whole ledgerJSON
		if err := json.NewDecoder(io.LimitReader(strings.NewReader(body), lim.bytes)).Decode(&whole); err != nil {
			t.Fatalf("read row by row, but the whole does not decode: %v", err)
		}
		want := NewLedger()
		for _, e := range whole.Entries {
			want.Add(e)
		}
		if got, w := l.Entries(), want.Entries(); !reflect.DeepEqual(got, w) && (len(got) != 0 || len(w) != 0) {
			t.Errorf("entries %+v, decoded whole %+v", got, w)
		}
		if !reflect.DeepEqual(bills, whole.Bills) && (len(bills) != 0 || len(whole.Bills) != 0) {
			t.Errorf("bills %+v, decoded whole %+v", bills, whole.Bills)
		}
		if got := l.Coarsened(); !reflect.DeepEqual(got, whole.Coarsened) && (len(got) != 0 || len(whole.Coarsened) != 0) {
			t.Errorf("coarsened %+v, decoded whole %+v", got, whole.Coarsened)
		}
	})
}
