// Package labelvalue turns a value read from data (a model, tool or agent
// name) into a safe Prometheus label value. It is the one definition both
// the store, which makes label values, and the thread parser, which hashes
// the values it folds the same way, use.
package labelvalue

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxBytes bounds a label value; a longer one is cut at a rune boundary.
const MaxBytes = 128

// Unknown stands for an empty value.
const Unknown = "unknown"

// Sanitize returns v as a label value: valid UTF-8, no control characters
// (NUL, the rest of C0, DEL, C1: each becomes U+FFFD, as invalid UTF-8
// does), at most MaxBytes, never empty.
func Sanitize(v string) string {
	if v == "" {
		return Unknown
	}
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		v = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return utf8.RuneError
			}
			return r
		}, v)
	}
	if len(v) > MaxBytes {
		cut := MaxBytes
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut]
	}
	return v
}
