package threadgen

import (
	"strconv"
)

// jsonWriter writes pretty-printed JSON in the layout of
// JSON.stringify(v, null, 2). key* methods write an object member, elem*
// ones an array element.
type jsonWriter struct {
	b     []byte
	depth int
	cnt   [48]int32
}

const spaces = "                                                                                                                                "

func (w *jsonWriter) sep() {
	if w.cnt[w.depth] > 0 {
		w.b = append(w.b, ',')
	}
	w.cnt[w.depth]++
	w.b = append(w.b, '\n')
	w.b = append(w.b, spaces[:2*w.depth]...)
}

// key starts an object member; k must not need escaping.
func (w *jsonWriter) key(k string) {
	w.sep()
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':', ' ')
}

func (w *jsonWriter) open(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.cnt[w.depth] = 0
}

func (w *jsonWriter) obj() { w.open('{') }
func (w *jsonWriter) arr() { w.open('[') }

func (w *jsonWriter) end(c byte) {
	if w.cnt[w.depth] > 0 {
		w.b = append(w.b, '\n')
		w.b = append(w.b, spaces[:2*(w.depth-1)]...)
	}
	w.b = append(w.b, c)
	w.depth--
}

func (w *jsonWriter) endObj() { w.end('}') }
func (w *jsonWriter) endArr() { w.end(']') }

func (w *jsonWriter) str(s string) {
	w.b = append(w.b, '"')
	w.b = appendEscaped(w.b, s)
	w.b = append(w.b, '"')
}

func (w *jsonWriter) keyString(k, v string) { w.key(k); w.str(v) }
func (w *jsonWriter) keyInt(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}
func (w *jsonWriter) keyBool(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}
func (w *jsonWriter) keyFloat(k string, v float64) {
	w.key(k)
	w.b = strconv.AppendFloat(w.b, v, 'f', -1, 64)
}
func (w *jsonWriter) keyObject(k string)  { w.key(k); w.obj() }
func (w *jsonWriter) keyArray(k string)   { w.key(k); w.arr() }
func (w *jsonWriter) elemString(v string) { w.sep(); w.str(v) }
func (w *jsonWriter) elemInt(v int64) {
	w.sep()
	w.b = strconv.AppendInt(w.b, v, 10)
}
func (w *jsonWriter) elemObject() { w.sep(); w.obj() }

// keyEmpty writes k: {} or k: [].
func (w *jsonWriter) keyEmpty(k, v string) {
	w.key(k)
	w.b = append(w.b, v...)
}

// keyStringStart starts a string member whose content the caller appends, already
// escaped, to w.b; stringEnd closes it.
func (w *jsonWriter) keyStringStart(k string) {
	w.key(k)
	w.b = append(w.b, '"')
}
func (w *jsonWriter) stringEnd() { w.b = append(w.b, '"') }

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
