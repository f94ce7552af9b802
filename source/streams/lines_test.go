package streams

import (
	"bufio"
	"strings"
	"testing"
	"testing/iotest"
)

func TestScanLines(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name, in     string
		unterminated bool
		want         []string
		consumed     int64
	}{
		{"lf", "a\nbb\n", false, []string{"a", "bb"}, 5},
		{"crlf", "a\r\nbb\r\n", false, []string{"a", "bb"}, 7},
		{"partial last line waits", "a\nbb", false, []string{"a"}, 2},
		{"partial last line of a body counts", "a\nbb", true, []string{"a", "bb"}, 4},
		{"blank lines", "\n\na\n", false, []string{"", "", "a"}, 4},
		{"too long", "a\n" + long + "\nb\n", false, []string{"a", "<too long>", "b"}, int64(5 + len(long))},
		{"spans buffer", strings.Repeat("y", 40) + "\n", false, []string{strings.Repeat("y", 40)}, 41},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A 16-byte buffer fed one byte at a time: every line spans reads.
			br := bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(tt.in)), 16)
			var got []string
			n, err := scanLines(br, 50, tt.unterminated, func(line []byte, tooLong bool) {
				if tooLong {
					got = append(got, "<too long>")
					return
				}
				got = append(got, string(line))
			})
			if err != nil || n != tt.consumed || strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("got %q consumed %d err %v; want %q consumed %d", got, n, err, tt.want, tt.consumed)
			}
		})
	}
}
