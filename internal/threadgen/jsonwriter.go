package threadgen

import (
	"strconv"
)

// Pretty-printing JSON writer (the layout of JSON.stringify(v, null, 2)).

type jw struct {
	b     []byte
	depth int
	cnt   [48]int32
}

const spaces = "                                                                                                                                "

func (w *jw) sep() {
	if w.cnt[w.depth] > 0 {
		w.b = append(w.b, ',')
	}
	w.cnt[w.depth]++
	w.b = append(w.b, '\n')
	w.b = append(w.b, spaces[:2*w.depth]...)
}

// key starts an object member; k must not need escaping.
func (w *jw) key(k string) {
	w.sep()
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':', ' ')
}

func (w *jw) open(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.cnt[w.depth] = 0
}

func (w *jw) obj() { w.open('{') }
func (w *jw) arr() { w.open('[') }

func (w *jw) end(c byte) {
	if w.cnt[w.depth] > 0 {
		w.b = append(w.b, '\n')
		w.b = append(w.b, spaces[:2*(w.depth-1)]...)
	}
	w.b = append(w.b, c)
	w.depth--
}

func (w *jw) endObj() { w.end('}') }
func (w *jw) endArr() { w.end(']') }

func (w *jw) str(s string) {
	w.b = append(w.b, '"')
	w.b = appendEscaped(w.b, s)
	w.b = append(w.b, '"')
}

func (w *jw) kStr(k, v string) { w.key(k); w.str(v) }
func (w *jw) kInt(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}
func (w *jw) kBool(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}
func (w *jw) kFloat(k string, v float64) {
	w.key(k)
	w.b = strconv.AppendFloat(w.b, v, 'f', -1, 64)
}
func (w *jw) kObj(k string) { w.key(k); w.obj() }
func (w *jw) kArr(k string) { w.key(k); w.arr() }
func (w *jw) eStr(v string) { w.sep(); w.str(v) }
func (w *jw) eInt(v int64) {
	w.sep()
	w.b = strconv.AppendInt(w.b, v, 10)
}
func (w *jw) eObj() { w.sep(); w.obj() }

// kEmpty writes k: {} or k: [].
func (w *jw) kEmpty(k, v string) {
	w.key(k)
	w.b = append(w.b, v...)
}

// kBegin starts a string member whose content the caller appends, already
// escaped, to w.b; strEnd closes it.
func (w *jw) kBegin(k string) {
	w.key(k)
	w.b = append(w.b, '"')
}
func (w *jw) strEnd() { w.b = append(w.b, '"') }

// appendEscaped escapes s the way JSON.stringify does: \" \\ \b \f \n \r \t,
// other control characters as \u00xx, everything else (including non-ASCII
// and U+2028/U+2029) as is.
func appendEscaped(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		}
		start = i + 1
	}
	return append(dst, s[start:]...)
}
