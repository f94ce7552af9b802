package shellcmd

import "strings"

// The lexer is a pragmatic reading of POSIX shell and bash words: enough to
// tell the simple commands of a call apart and to know the words each is
// made of, not to run them. It keeps a word's value only up to maxWord
// bytes (the words it compares are short), nests substitutions up to
// maxDepth, and looks at each byte of the command a bounded number of
// times, so any input costs time linear in its length and no allocation.

const (
	// maxWord is the longest word value kept: longer words are passed as
	// unknown (a message, a path), which no comparison needs.
	maxWord = 64
	// maxDepth bounds nested command substitutions kept apart; deeper
	// ones are read as part of the innermost kept level.
	maxDepth = 16
	// maxHeredocs bounds the heredocs pending on one line; more are read
	// as commands (a call that holds nine heredocs on a line is no commit
	// to trust).
	maxHeredocs = 8
)

// What the lexer reads goes to a counter (commands.go): the words of
// each simple command, in order, then the command's end, at the depth of
// substitution it is in (0 at the top). A word's value is known when it
// holds no expansion and is at most maxWord bytes; its first bytes are
// passed either way. The counter is a concrete type, not an interface, so
// that the lexer's buffers stay on the stack.

// level is a command substitution ($( ), ` `, <( ), >( )) being read, or
// the top.
type level struct {
	close  byte // the byte that ends it: ')' or '`'; 0 at the top
	parens int  // plain parentheses open inside it
	inDQ   bool // it was opened inside double quotes, read again after it
	// The outer command's redirection state and word when it was opened.
	redirect, heredoc, strip bool
	word                     [maxWord]byte
	n                        int
	long                     bool
}

type heredoc struct {
	delim [maxWord]byte
	n     int
	strip bool // <<- : leading tabs are not part of a line
}

type lexer struct {
	s      string
	i      int
	out    *counter
	depth  int
	over   int // substitutions opened past maxDepth, not kept apart
	levels [maxDepth]level
	dq     bool // inside double quotes

	inWord   bool
	buf      [maxWord]byte
	n        int
	long     bool // the word is longer than maxWord
	expanded bool // the word holds an expansion: its value is unknown

	redirect bool // the next word is a redirection's target
	heredoc  bool // the next word is a heredoc's delimiter
	strip    bool
	docs     [maxHeredocs]heredoc
	ndocs    int

	steps int // iterations of the loops that read the command
}

// lex reads command and tells out its commands and words. It returns the
// steps it took, each of which moved forward in command: the fuzz target
// holds them to the command's length.
func lex(command string, out *counter) int {
	l := lexer{s: command, out: out}
	l.run()
	return l.steps
}

func (l *lexer) run() {
	for l.i < len(l.s) {
		l.steps++
		if l.dq {
			l.quoted()
			continue
		}
		c := l.s[l.i]
		switch c {
		case ' ', '\t', '\r':
			l.endWord()
			l.i++
		case '\n':
			l.endWord()
			l.endCommand()
			l.i++
			l.heredocs()
		case ';', '&', '|':
			l.endWord()
			next := l.peek(1)
			switch {
			case c == '&' && next == '>':
				// &> and &>>: a redirection of both outputs.
				l.i += 2
				if l.peek(0) == '>' {
					l.i++
				}
				l.redirect = true
				continue
			case next == c || (c == '|' && next == '&') || (c == ';' && next == '&'):
				l.i += 2
			default:
				l.i++
			}
			l.endCommand()
		case '<', '>':
			l.redirection(c)
		case '(':
			l.endWord()
			l.endCommand()
			l.levels[l.depth].parens++
			l.i++
		case ')':
			l.endWord()
			l.endCommand()
			l.i++
			l.closeParen()
		case '`':
			l.i++
			if l.levels[l.depth].close == '`' && l.over == 0 {
				l.endWord()
				l.endCommand()
				l.pop()
			} else {
				l.push('`')
			}
		case '#':
			if l.inWord {
				l.add(c)
				l.i++
				continue
			}
			// A comment: up to the line's end, which is read as one.
			if j := strings.IndexByte(l.s[l.i:], '\n'); j >= 0 {
				l.i += j
			} else {
				l.i = len(l.s)
			}
		case '\\':
			if l.peek(1) == '\n' {
				l.i += 2 // a line continuation joins what it splits
				continue
			}
			if l.i+1 < len(l.s) {
				l.add(l.s[l.i+1])
			}
			l.i += 2
		case '\'':
			l.inWord = true
			rest := l.s[l.i+1:]
			j := strings.IndexByte(rest, '\'')
			if j < 0 {
				j = len(rest)
			}
			l.addString(rest[:j])
			l.i += j + 2
		case '"':
			l.inWord = true
			l.dq = true
			l.i++
		case '$':
			l.dollar()
		default:
			l.add(c)
			l.i++
		}
	}
	// Substitutions left open at the end close there.
	for l.depth > 0 {
		l.endWord()
		l.endCommand()
		l.pop()
	}
	l.endWord()
	l.endCommand()
}

// quoted reads inside double quotes.
func (l *lexer) quoted() {
	c := l.s[l.i]
	switch c {
	case '"':
		l.dq = false
		l.i++
	case '\\':
		switch next := l.peek(1); next {
		case '\n':
		case '$', '`', '"', '\\':
			l.add(next)
		default:
			l.add(c)
			if l.i+1 < len(l.s) {
				l.add(next)
			}
		}
		l.i += 2
	case '$':
		l.dollar()
	case '`':
		l.i++
		if l.levels[l.depth].close == '`' && l.over == 0 {
			// A backquote closing the substitution this string is in.
			l.dq = false
			l.endWord()
			l.endCommand()
			l.pop()
		} else {
			l.push('`')
		}
	default:
		l.add(c)
		l.i++
	}
}

// dollar reads an expansion: $( ), ${ }, $'…', $"…", $name.
func (l *lexer) dollar() {
	l.inWord = true
	switch next := l.peek(1); {
	case next == '(':
		l.i += 2
		l.push(')')
	case next == '{':
		// A parameter expansion: its value is unknown; skip to the
		// brace that closes it.
		l.expanded = true
		depth := 0
		for l.i += 2; l.i < len(l.s); l.i++ {
			if b := l.s[l.i]; b == '{' {
				depth++
			} else if b == '}' {
				if depth == 0 {
					l.i++
					return
				}
				depth--
			}
		}
	case next == '\'' && !l.dq:
		// ANSI-C quoting: a backslash escapes the next byte.
		for l.i += 2; l.i < len(l.s); l.i++ {
			b := l.s[l.i]
			if b == '\'' {
				l.i++
				return
			}
			if b == '\\' && l.i+1 < len(l.s) {
				l.i++
				b = l.s[l.i]
			}
			l.add(b)
		}
	case next == '"' && !l.dq:
		l.i += 2
		l.dq = true
	case next == '_' || next >= 'a' && next <= 'z' || next >= 'A' && next <= 'Z' ||
		next >= '0' && next <= '9' || strings.IndexByte("@*#?-$!", next) >= 0:
		l.expanded = true
		l.add('$')
		l.i++
	default:
		l.add('$')
		l.i++
	}
}

// redirection reads <, >, their doubled and & forms, heredocs (<<, <<-),
// here-strings (<<<) and process substitutions (<( ), >( )).
func (l *lexer) redirection(c byte) {
	// A word of digits right before it is the descriptor (2>&1), not an
	// argument.
	if l.inWord && !l.expanded && !l.long && l.n > 0 && allDigits(l.buf[:l.n]) {
		l.resetWord()
	}
	l.endWord()
	next := l.peek(1)
	switch {
	case next == '(':
		l.i += 2
		l.inWord = true
		l.push(')')
		return
	case c == '<' && next == '<' && l.peek(2) == '<':
		l.i += 3
		l.redirect = true
		return
	case c == '<' && next == '<':
		l.i += 2
		l.strip = l.peek(0) == '-'
		if l.strip {
			l.i++
		}
		l.heredoc = true
		return
	}
	l.i++
	for l.i < len(l.s) && strings.IndexByte("<>&|", l.s[l.i]) >= 0 && l.peek(1) != '(' {
		l.i++
	}
	l.redirect = true
}

// heredocs skips the bodies of the heredocs opened on the line just ended.
func (l *lexer) heredocs() {
	for k := 0; k < l.ndocs; k++ {
		d := &l.docs[k]
		for l.i < len(l.s) {
			l.steps++
			line := l.s[l.i:]
			if j := strings.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
				l.i += j + 1
			} else {
				l.i = len(l.s)
			}
			line = strings.TrimSuffix(line, "\r")
			if d.strip {
				line = strings.TrimLeft(line, "\t")
			}
			if line == string(d.delim[:d.n]) {
				break
			}
		}
	}
	l.ndocs = 0
}

func (l *lexer) closeParen() {
	lv := &l.levels[l.depth]
	switch {
	case l.over > 0:
		l.over--
	case lv.parens > 0:
		lv.parens--
	case lv.close == ')':
		l.pop()
	}
}

// push opens a substitution: the word it is part of has an unknown value,
// and its commands are read one level deeper.
func (l *lexer) push(close byte) {
	l.inWord = true
	l.expanded = true
	if l.depth+1 >= maxDepth {
		l.over++
		return
	}
	l.depth++
	lv := &l.levels[l.depth]
	*lv = level{close: close, inDQ: l.dq, redirect: l.redirect, heredoc: l.heredoc, strip: l.strip, n: l.n, long: l.long}
	copy(lv.word[:], l.buf[:l.n])
	l.dq, l.redirect, l.heredoc = false, false, false
	l.resetWord()
}

// pop closes the innermost substitution and goes on with the word it was
// part of.
func (l *lexer) pop() {
	if l.depth == 0 {
		return
	}
	lv := &l.levels[l.depth]
	l.depth--
	l.dq, l.redirect, l.heredoc, l.strip = lv.inDQ, lv.redirect, lv.heredoc, lv.strip
	copy(l.buf[:], lv.word[:lv.n])
	l.n, l.long = lv.n, lv.long
	l.inWord, l.expanded = true, true
}

func (l *lexer) peek(k int) byte {
	if l.i+k < len(l.s) {
		return l.s[l.i+k]
	}
	return 0
}

func (l *lexer) add(b byte) {
	l.inWord = true
	if l.n < maxWord {
		l.buf[l.n] = b
		l.n++
	} else {
		l.long = true
	}
}

func (l *lexer) addString(s string) {
	l.inWord = true
	k := copy(l.buf[l.n:], s)
	l.n += k
	if k < len(s) {
		l.long = true
	}
}

func (l *lexer) resetWord() {
	l.inWord, l.n, l.long, l.expanded = false, 0, false, false
}

// endWord hands the word read to where it belongs: a heredoc's delimiter,
// a redirection's target (dropped) or the command.
func (l *lexer) endWord() {
	if !l.inWord {
		return
	}
	switch {
	case l.heredoc:
		l.heredoc = false
		if l.ndocs < maxHeredocs && !l.long {
			d := &l.docs[l.ndocs]
			d.n = copy(d.delim[:], l.buf[:l.n])
			d.strip = l.strip
			l.ndocs++
		}
	case l.redirect:
		l.redirect = false
	default:
		l.out.word(l.depth, l.buf[:l.n], !l.long && !l.expanded)
	}
	l.resetWord()
}

func (l *lexer) endCommand() {
	l.redirect, l.heredoc = false, false
	l.out.end(l.depth)
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
