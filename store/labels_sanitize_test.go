package store

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestLabelValuesFromDataAreSanitized: issue 19 saw model="bad\x00model"
// in the exposition. Control characters (NUL, other C0, DEL, C1) and
// invalid UTF-8 become U+FFFD; a long value is cut at a rune boundary; an
// empty one reads "unknown".
func TestLabelValuesFromDataAreSanitized(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"bad\x00model", "bad\uFFFDmodel"},
		{"tab\there", "tab\uFFFDhere"},
		{"new\nline\r", "new\uFFFDline\uFFFD"},
		{"esc\x1b[31m", "esc\uFFFD[31m"},
		{"del\x7f", "del\uFFFD"},
		{"c1\u0085", "c1\uFFFD"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"", UnknownValue},
		{"claude-sonnet-4", "claude-sonnet-4"},
		{"modèle ünïcode", "modèle ünïcode"},
		{strings.Repeat("\x00", 100), strings.Repeat("\uFFFD", 42)},
	} {
		for name, c := range map[string]func(*LabelCap) string{
			"trusted":   func(c *LabelCap) string { return c.value("model", tc.in) },
			"untrusted": func(c *LabelCap) string { return c.valueUntrusted("model", tc.in) },
		} {
			got := c(NewLabelCap(100, nil))
			if got != tc.want {
				t.Errorf("%s %q: %q, want %q", name, tc.in, got, tc.want)
			}
			if !utf8.ValidString(got) || len(got) > maxLabelLength || strings.IndexFunc(got, unicode.IsControl) >= 0 {
				t.Errorf("%s %q: %q is not a clean label value", name, tc.in, got)
			}
		}
	}
}
