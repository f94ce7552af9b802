package shellcmd

import (
	"fmt"
	"strconv"
	"strings"
)

// trace writes down the commands the lexer read, one a line: the depth,
// then each word (an unknown word as ?word?). Only the lexer's golden test
// sets one; it copies what it keeps, so the lexer's buffers stay its own.
type trace struct {
	b     strings.Builder
	words [maxDepth][]string
}

func (r *trace) word(depth int, w []byte, known bool) {
	s := string(w)
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' }) {
		s = strconv.Quote(s)
	}
	if !known {
		s = "?" + s + "?"
	}
	r.words[depth] = append(r.words[depth], s)
}

func (r *trace) end(depth int) {
	if len(r.words[depth]) == 0 {
		return
	}
	fmt.Fprintf(&r.b, "  %d: %s\n", depth, strings.Join(r.words[depth], " | "))
	r.words[depth] = r.words[depth][:0]
}
