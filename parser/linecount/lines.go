package linecount

import "strings"

// Lines is the number of lines of a created file as Amp's thread row
// counts them: the text split on "\n" after dropping one last "\n". A last
// line break opens no line, and an empty file is one (empty) line: Amp
// shows a file created empty as 1 line added.
func Lines(s string) int64 {
	s = strings.TrimSuffix(s, "\n")
	return int64(strings.Count(s, "\n")) + 1
}

// splitInto appends the lines of s split on "\n" as JavaScript's
// s.split("\n") does (Amp splits so before its diff) to dst, which the
// caller may give an array on its stack: a last "\n" leaves an empty last
// line, and an empty s is one empty line. A "\r" before a "\n" stays part
// of its line.
func splitInto(dst []string, s string) []string {
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return append(dst, s)
		}
		dst = append(dst, s[:i])
		s = s[i+1:]
	}
}
