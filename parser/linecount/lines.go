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

// splitInto appends the lines of s without their "\n" to dst (a last
// "\n" opens no line), which the caller may give an array on its stack.
func splitInto(dst []string, s string) []string {
	if s == "" {
		return dst
	}
	s = strings.TrimSuffix(s, "\n")
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return append(dst, s)
		}
		dst = append(dst, s[:i])
		s = s[i+1:]
	}
}
