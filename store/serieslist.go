package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// SeriesList is a thread's persisted series. It is written compactly, one
// array per series — ["tokens","claude-opus-4-6","output",1234] — and
// decoded by hand: the state holds one per thread, tens of thousands of
// them, and reading them back is most of a restart. The object form of
// earlier state files ({"f":…,"a":…,"b":…,"v":…}) is read too.
type SeriesList []SeriesValue

// MarshalJSON writes the compact form.
func (l SeriesList) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	out := make([]byte, 0, 48*len(l)+2)
	out = append(out, '[')
	for i, sv := range l {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '[')
		for _, s := range []string{sv.Family, sv.L1, sv.L2} {
			b, err := json.Marshal(s)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
			out = append(out, ',')
		}
		out = strconv.AppendInt(out, sv.Value, 10)
		out = append(out, ']')
	}
	return append(out, ']'), nil
}

var errSeriesSyntax = errors.New("malformed series list")

// UnmarshalJSON reads the compact form, or the object form.
func (l *SeriesList) UnmarshalJSON(b []byte) error {
	p := seriesParser{b: b}
	p.space()
	if p.peek() == 'n' && bytes.Equal(bytes.TrimSpace(p.b[p.i:]), []byte("null")) {
		*l = nil
		return nil
	}
	if !p.eat('[') {
		return errSeriesSyntax
	}
	p.space()
	if p.peek() == '{' {
		var objs []SeriesValue
		if err := json.Unmarshal(b, &objs); err != nil {
			return err
		}
		*l = objs
		return nil
	}
	out := SeriesList{}
	if p.eat(']') {
		*l = out
		return p.end()
	}
	for {
		var sv SeriesValue
		if !p.eat('[') {
			return errSeriesSyntax
		}
		for _, dst := range []*string{&sv.Family, &sv.L1, &sv.L2} {
			s, err := p.str()
			if err != nil {
				return err
			}
			*dst = s
			if !p.eat(',') {
				return errSeriesSyntax
			}
		}
		v, err := p.int()
		if err != nil {
			return err
		}
		sv.Value = v
		if !p.eat(']') {
			return errSeriesSyntax
		}
		out = append(out, sv)
		if p.eat(']') {
			*l = out
			return p.end()
		}
		if !p.eat(',') {
			return errSeriesSyntax
		}
	}
}

type seriesParser struct {
	b []byte
	i int
}

func (p *seriesParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\n' || p.b[p.i] == '\t' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *seriesParser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// eat skips white space and the byte c, and reports whether it was there.
func (p *seriesParser) eat(c byte) bool {
	p.space()
	if p.peek() != c {
		return false
	}
	p.i++
	return true
}

func (p *seriesParser) end() error {
	p.space()
	if p.i != len(p.b) {
		return errSeriesSyntax
	}
	return nil
}

func (p *seriesParser) str() (string, error) {
	if !p.eat('"') {
		return "", errSeriesSyntax
	}
	start := p.i
	escaped := false
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '\\':
			escaped = true
			p.i += 2
			continue
		case c == '"':
			raw := p.b[start:p.i]
			p.i++
			if escaped {
				var s string
				if err := json.Unmarshal(p.b[start-1:p.i], &s); err != nil {
					return "", err
				}
				return s, nil
			}
			if s, ok := familyNames[string(raw)]; ok {
				return s, nil
			}
			return string(raw), nil
		case c < 0x20:
			return "", errSeriesSyntax
		}
		p.i++
	}
	return "", errSeriesSyntax
}

func (p *seriesParser) int() (int64, error) {
	p.space()
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	v, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("series value: %w", err)
	}
	return v, nil
}
