package threadgen

import (
	"strconv"
)

// Text.

// fill appends about n bytes of escaped lines from p: runs of consecutive
// lines starting at random places, so the text reads like real output.
func (t *threadBuilder) fill(p *pool, n int) {
	w, r := t.w, t.r
	end := len(w.b) + n
	lines := p.lines
	for len(w.b) < end {
		j := r.IntN(len(lines))
		run := 4 + r.IntN(28)
		for ; run > 0 && len(w.b) < end; run-- {
			w.b = append(w.b, lines[j]...)
			j++
			if j == len(lines) {
				j = 0
			}
		}
	}
}

// fillProse appends about n bytes of prose without a trailing newline.
func (t *threadBuilder) fillProse(p *pool, n int) {
	w, r := t.w, t.r
	end := len(w.b) + n
	for len(w.b) < end {
		w.b = append(w.b, p.lines[r.IntN(len(p.lines))]...)
	}
	for len(w.b) >= 2 && w.b[len(w.b)-2] == '\\' && w.b[len(w.b)-1] == 'n' {
		w.b = w.b[:len(w.b)-2]
	}
	if len(w.b) > 0 && w.b[len(w.b)-1] == ' ' {
		w.b = w.b[:len(w.b)-1]
	}
}

func (t *threadBuilder) fillMarkdown(n int) { t.fill(poolMarkdown, n) }

func (t *threadBuilder) fillCode(lang, n int) { t.fill(codePools[lang], n) }

func (t *threadBuilder) fillNumberedCode(lang, n int) {
	w, r := t.w, t.r
	lines := codePools[lang].lines
	end := len(w.b) + n
	j := r.IntN(len(lines))
	for ln := int64(1); len(w.b) < end; ln++ {
		w.b = strconv.AppendInt(w.b, ln, 10)
		w.b = append(w.b, ':', ' ')
		w.b = append(w.b, lines[j]...)
		j++
		if j == len(lines) {
			j = 0
		}
	}
}

func (t *threadBuilder) fillDiff(lang, n int) {
	w, r := t.w, t.r
	lines := codePools[lang].lines
	end := len(w.b) + n
	j := r.IntN(len(lines))
	for len(w.b) < end {
		switch u := r.IntN(10); {
		case u < 6:
			w.b = append(w.b, ' ')
		case u < 8:
			w.b = append(w.b, '-')
		default:
			w.b = append(w.b, '+')
		}
		w.b = append(w.b, lines[j]...)
		j++
		if j == len(lines) {
			j = 0
		}
	}
}

// base64Raw appends n bytes of base64 text.
func (t *threadBuilder) base64Raw(n int) {
	w, r := t.w, t.r
	for n > 0 {
		off := r.IntN(len(b64Pool)/4) * 4
		k := min(n, len(b64Pool)-off)
		w.b = append(w.b, b64Pool[off:off+k]...)
		n -= k
	}
}

// base64Image appends about n bytes of base64 that starts like an image of
// type mt and is valid base64 (a multiple of four characters).
func (t *threadBuilder) base64Image(n int, mt string) {
	prefix := "iVBORw0KGgoAAAANSUhEUgAA"
	switch mt {
	case "image/jpeg":
		prefix = "/9j/4AAQSkZJRgABAQAAAQAB"
	case "image/webp":
		prefix = "UklGRiQAAABXRUJQVlA4IBgA"
	}
	t.w.b = append(t.w.b, prefix...)
	t.base64Raw(max(4, (n-len(prefix))/4*4))
}
