package thread

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/testsize"
)

// referenceParseTimestamp is parseTimestamp as it was before the hand-written
// path: the definition of the right answer.
func referenceParseTimestamp(b []byte) int64 {
	ts, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return 0
	}
	return ts.UnixMilli()
}

func TestParseTimestampEdgeCases(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		fast bool // whether parseUTCMillis must take it rather than fall back
	}{
		{"2026-01-05T09:00:00.123Z", 1767603600123, true},
		{"1970-01-01T00:00:00Z", 0, true},
		{"1970-01-01T00:00:00.000Z", 0, true},
		{"1970-01-01T00:00:00.001Z", 1, true},
		{"1969-12-31T23:59:59.999Z", -1, true},
		{"1969-12-31T23:59:59.9999Z", -1, true},
		{"1969-12-31T23:59:59.0009Z", -1000, true},
		{"1969-12-31T23:59:59Z", -1000, true},
		{"1969-01-01T00:00:00Z", -365 * 86400 * 1000, true},
		{"2024-02-29T12:00:00Z", 1709208000000, true},
		{"2025-02-29T12:00:00Z", 0, false},
		{"2100-02-29T12:00:00Z", 0, false},
		{"2000-02-29T00:00:00Z", 951782400000, true},
		{"1900-02-29T00:00:00Z", 0, false},
		{"2024-04-31T00:00:00Z", 0, false},
		{"2024-04-30T00:00:00Z", 1714435200000, true},
		{"2024-12-31T23:59:59.999999999Z", 1735689599999, true},
		{"2024-13-01T00:00:00Z", 0, false},
		{"2024-00-01T00:00:00Z", 0, false},
		{"2024-01-00T00:00:00Z", 0, false},
		{"2024-01-32T00:00:00Z", 0, false},
		{"2024-01-01T24:00:00Z", 0, false},
		{"2024-01-01T00:60:00Z", 0, false},
		{"2024-01-01T00:00:60Z", 0, false}, // time.Parse rejects leap seconds
		{"0000-01-01T00:00:00Z", -62167219200000, true},
		{"0000-02-29T00:00:00Z", -62162121600000, true}, // year 0 is a leap year
		{"0000-01-01T00:00:00.001Z", -62167219199999, true},
		{"9999-12-31T23:59:59.999999999Z", 253402300799999, true},

		// Fraction lengths 0..10; ten digits are valid but left to time.Parse.
		{"2026-01-05T09:00:00Z", 1767603600000, true},
		{"2026-01-05T09:00:00.1Z", 1767603600100, true},
		{"2026-01-05T09:00:00.12Z", 1767603600120, true},
		{"2026-01-05T09:00:00.123Z", 1767603600123, true},
		{"2026-01-05T09:00:00.1234Z", 1767603600123, true},
		{"2026-01-05T09:00:00.12345Z", 1767603600123, true},
		{"2026-01-05T09:00:00.123456Z", 1767603600123, true},
		{"2026-01-05T09:00:00.1234567Z", 1767603600123, true},
		{"2026-01-05T09:00:00.12345678Z", 1767603600123, true},
		{"2026-01-05T09:00:00.123456789Z", 1767603600123, true},
		{"2026-01-05T09:00:00.1234567891Z", 1767603600123, false},
		{"2026-01-05T09:00:00.Z", 0, false},
		{"2026-01-05T09:00:00.12a4Z", 0, false},

		// Valid RFC 3339 outside the fast shape.
		{"2026-01-05T09:00:00.123+02:00", 1767596400123, false},
		{"2026-01-05T09:00:00-05:30", 1767623400000, false},
		{"2026-01-05T09:00:00+00:00", 1767603600000, false},
		{"2026-01-05T09:00:00,123Z", 1767603600123, false}, // accepted by time.Parse's layout parser
		{"2026-01-05T9:00:00Z", 1767603600000, false},      // likewise

		// Lowercase and other separators.
		{"2026-01-05t09:00:00Z", 0, false},
		{"2026-01-05T09:00:00z", 0, false},
		{"2026-01-05 09:00:00Z", 0, false},
		{"2026/01/05T09:00:00Z", 0, false},
		{"2026-01-05T09.00.00Z", 0, false},

		// Garbage.
		{"", 0, false},
		{"Z", 0, false},
		{"null", 0, false},
		{"not a timestamp at all", 0, false},
		{"2026-01-05T09:00:00.123Z ", 0, false},
		{" 2026-01-05T09:00:00.123Z", 0, false},
		{"+2026-01-05T09:00:00Z", 0, false},
		{"20260-01-05T09:00:00Z", 0, false},
		{"2026-01-05T09:00:00.123ZZ", 0, false},
		{"\x002026-01-05T09:00:00Z", 0, false},
		{"2026-01-05T09:00:00\xff123Z", 0, false},
		{"-001-01-05T09:00:00Z", 0, false},
	}
	for _, c := range cases {
		if got := parseTimestamp([]byte(c.in)); got != c.want {
			t.Errorf("parseTimestamp(%q) = %d, want %d", c.in, got, c.want)
		}
		if ref := referenceParseTimestamp([]byte(c.in)); ref != c.want {
			t.Errorf("table wrong: time.Parse gives %d for %q, table says %d", ref, c.in, c.want)
		}
		if _, ok := parseUTCMillis([]byte(c.in)); ok != c.fast {
			t.Errorf("parseUTCMillis(%q) ok = %v, want %v", c.in, ok, c.fast)
		}
	}
}

// The calendar arithmetic is small enough to check on every day the format
// can express, rather than trusting a sample to hit each leap rule.
func TestParseTimestampEveryDay(t *testing.T) {
	if testing.Short() {
		t.Skip("3.6M days")
	}
	d := time.Date(0, 1, 1, 23, 59, 59, 999_000_000, time.UTC)
	var buf []byte
	for d.Year() <= 9999 {
		buf = d.AppendFormat(buf[:0], "2006-01-02T15:04:05.000Z")
		if got, ok := parseUTCMillis(buf); !ok || got != d.UnixMilli() {
			t.Fatalf("parseUTCMillis(%q) = %d, %v, want %d, true", buf, got, ok, d.UnixMilli())
		}
		d = d.AddDate(0, 0, 1)
	}
}

// Every prefix of a timestamp is a string a truncated file could hold.
func TestParseTimestampTruncated(t *testing.T) {
	for _, full := range []string{
		"2026-01-05T09:00:00.123456789Z",
		"2026-01-05T09:00:00.123+02:00",
		"1969-12-31T23:59:59.999Z",
	} {
		for i := 0; i <= len(full); i++ {
			compareTimestamp(t, []byte(full[:i]))
			compareTimestamp(t, []byte(full[i:]))
		}
	}
}

// TestParseTimestampDifferential compares with time.Parse on strings that
// are mostly one or two edits away from a valid timestamp, where a
// hand-written parser is most likely to disagree.
func TestParseTimestampDifferential(t *testing.T) {
	n := 50_000
	if testsize.Long() {
		n = 500_000
	}
	r := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for range n {
		b := randomTimestamp(r)
		if _, ok := parseUTCMillis(b); ok {
			fast++
		}
		if got, want := parseTimestamp(b), referenceParseTimestamp(b); got != want {
			t.Fatalf("parseTimestamp(%q) = %d, time.Parse gives %d", b, got, want)
		}
	}
	// Guards against a generator that drifted into testing only the fallback.
	if fast < n/10 {
		t.Fatalf("only %d of %d inputs took the fast path", fast, n)
	}
}

func randomTimestamp(r *rand.Rand) []byte {
	// Boundary-heavy fields: the values just inside and just outside each range.
	year := []int{0, 1, 4, 99, 100, 400, 1600, 1900, 1969, 1970, 1971, 2000, 2024, 2025, 2026, 2100, 9999, r.IntN(10000)}[r.IntN(18)]
	month := r.IntN(14)
	day := r.IntN(33)
	hour := r.IntN(26)
	minute := r.IntN(62)
	sec := r.IntN(62)
	s := fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d", year, month, day, hour, minute, sec)
	if r.IntN(4) != 0 {
		s += "."
		digits := r.IntN(12)
		for range digits {
			s += string(rune('0' + r.IntN(10)))
		}
	}
	switch r.IntN(8) {
	case 0:
		s += fmt.Sprintf("%c%02d:%02d", "+-"[r.IntN(2)], r.IntN(26), r.IntN(62))
	case 1:
		s += "z"
	default:
		s += "Z"
	}
	b := []byte(s)
	const alphabet = "0123456789-:.TtZz+, \x00\xff/"
	for m := r.IntN(4) - 1; m > 0; m-- {
		if len(b) == 0 {
			break
		}
		i := r.IntN(len(b))
		switch r.IntN(4) {
		case 0: // replace
			b[i] = alphabet[r.IntN(len(alphabet))]
		case 1: // delete
			b = append(b[:i], b[i+1:]...)
		case 2: // insert
			b = append(b[:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[i:]...)...)
		case 3: // truncate
			b = b[:i]
		}
	}
	return b
}

func compareTimestamp(t testing.TB, b []byte) {
	t.Helper()
	if got, want := parseTimestamp(b), referenceParseTimestamp(b); got != want {
		t.Fatalf("parseTimestamp(%q) = %d, time.Parse gives %d", b, got, want)
	}
}

func FuzzParseTimestamp(f *testing.F) {
	f.Add([]byte("2026-01-05T09:00:00.123Z"))
	f.Fuzz(func(t *testing.T, b []byte) {
		compareTimestamp(t, b)
	})
}

func BenchmarkParseTimestamp(b *testing.B) {
	in := []byte("2026-01-05T09:00:00.123Z")
	for _, bc := range []struct {
		name string
		fn   func([]byte) int64
	}{
		{"fast", parseTimestamp},
		{"time.Parse", referenceParseTimestamp},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var sink int64
			for b.Loop() {
				sink += bc.fn(in)
			}
			if sink == 0 {
				b.Fatal("parsed to zero")
			}
		})
	}
}
