package report

import (
	"fmt"
	"time"
)

// ParseDate reads a --since or --until date, YYYY-MM-DD or YYYYMMDD (as
// ccusage takes them), and returns it as YYYY-MM-DD; "" stays "".
func ParseDate(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	for _, layout := range []string{"2006-01-02", "20060102"} {
		if len(s) != len(layout) {
			continue
		}
		if t, err := time.Parse(layout, s); err == nil {
			return t.Format("2006-01-02"), nil
		}
	}
	return "", fmt.Errorf("date %q: want YYYY-MM-DD or YYYYMMDD", s)
}
