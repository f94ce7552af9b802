package thread

import "time"

// parseTimestamp returns the Unix time in milliseconds of an RFC 3339
// timestamp, or 0 if b is not one that time.Parse(time.RFC3339Nano) accepts.
//
// It runs for every usage block and ledger event, and nearly every value is
// what JavaScript's Date.toISOString writes (UTC, "Z", three fraction
// digits), so that shape is decoded by hand; time.Parse, with its string
// conversion and general layout machinery, was a visible share of a parse.
// Every other input, including every invalid one, still goes through
// time.Parse so that the result is decided by it alone and cannot drift.
func parseTimestamp(b []byte) int64 {
	if ms, ok := parseUTCMillis(b); ok {
		return ms
	}
	ts, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return 0
	}
	return ts.UnixMilli()
}

// parseUTCMillis decodes YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z. It accepts a strict
// subset of what time.Parse's own RFC 3339 fast path accepts (which is tried
// before anything lenient), so whenever it reports ok the value is the one
// time.Parse would give. Anything else it declines rather than rejects,
// leaving the verdict to the caller's fallback: offsets, lowercase 't' or
// 'z', second 60, an empty or 10+ digit fraction, and the forms only
// time.Parse's layout-driven parser tolerates (a comma before the fraction,
// a one-digit hour).
func parseUTCMillis(b []byte) (int64, bool) {
	n := len(b)
	if n < len("2006-01-02T15:04:05Z") || n > len("2006-01-02T15:04:05.999999999Z") || b[n-1] != 'Z' {
		return 0, false
	}
	if b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	year, ok := num4(b[0:4])
	month, ok2 := num2(b[5:7])
	day, ok3 := num2(b[8:10])
	hour, ok4 := num2(b[11:13])
	minute, ok5 := num2(b[14:16])
	sec, ok6 := num2(b[17:19])
	if !(ok && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, false
	}
	// Second 60 is declined too: time.Parse rejects leap seconds, and the
	// fallback gives the same 0 without this code having to know that.
	if month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) ||
		hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}

	// time.Time.UnixMilli truncates the nanoseconds, which are never
	// negative, so only the first three digits count, padded with zeros;
	// the rest must still be digits for the input to be valid.
	var ms int64
	if n > len("2006-01-02T15:04:05Z") {
		if b[19] != '.' || n == len("2006-01-02T15:04:05.Z") {
			return 0, false
		}
		frac := b[20 : n-1]
		for _, c := range frac {
			if c-'0' > 9 {
				return 0, false
			}
		}
		switch len(frac) {
		case 1:
			ms = int64(frac[0]-'0') * 100
		case 2:
			ms = int64(frac[0]-'0')*100 + int64(frac[1]-'0')*10
		default:
			ms = int64(frac[0]-'0')*100 + int64(frac[1]-'0')*10 + int64(frac[2]-'0')
		}
	}

	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	return secs*1000 + ms, true
}

// num2 and num4 use unsigned wraparound so that one comparison per byte
// rejects everything outside '0'..'9'.
func num2(b []byte) (int, bool) {
	d0, d1 := b[0]-'0', b[1]-'0'
	return int(d0)*10 + int(d1), d0 <= 9 && d1 <= 9
}

func num4(b []byte) (int, bool) {
	d0, d1, d2, d3 := b[0]-'0', b[1]-'0', b[2]-'0', b[3]-'0'
	return int(d0)*1000 + int(d1)*100 + int(d2)*10 + int(d3), d0 <= 9 && d1 <= 9 && d2 <= 9 && d3 <= 9
}

// daysInMonth follows the proleptic Gregorian calendar, as time does, so
// year 0 is a leap year.
func daysInMonth(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is Howard Hinnant's days_from_civil: days since 1970-01-01
// in the proleptic Gregorian calendar. Counting years from March puts the
// leap day last, so the leap-day count is a plain function of the year.
// Shifting by 400 years (a whole number of cycles, 146097 days) keeps
// January and February of year 0 non-negative, so the divisions can be
// unsigned, which compile to cheaper code than signed ones.
func daysFromCivil(year, month, day int) int64 {
	y := uint(year) + 400
	var mp uint // months since March
	if month > 2 {
		mp = uint(month) - 3
	} else {
		mp = uint(month) + 9
		y--
	}
	days := 365*y + y/4 - y/100 + y/400 + (153*mp+2)/5 + uint(day) - 1
	// days for 1970-01-01, with the same 400-year shift.
	const epoch = 719468 + 146097
	return int64(days) - epoch
}
