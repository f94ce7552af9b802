// Package report prints what was spent, per day, per month or per thread
// (session), from the usage the exporter counts: the same tokens, credits
// and estimated dollars as its counters, grouped by the time of each item.
// Its JSON is the JSON of `ccusage amp daily|monthly|session --json`, so
// that scripts written for ccusage keep working (docs/report.md).
//
// The usage is kept as a ledger of 15-minute UTC buckets per thread and
// model (Ledger): every time zone in use today is a whole number of
// quarter hours away from UTC (India +05:30, Nepal +05:45, the Chathams
// +12:45), so the buckets add up to days in any of them exactly.
package report
