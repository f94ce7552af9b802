package linecount

import "strings"

// Lines is the number of lines of s: its "\n"s, plus one for a last line
// without one. An empty s has none.
func Lines(s string) int64 {
	if s == "" {
		return 0
	}
	n := int64(strings.Count(s, "\n"))
	if s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// split returns the lines of s without their "\n" (a last "\n" opens no
// line).
func split(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}
