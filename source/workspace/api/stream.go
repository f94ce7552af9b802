package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// topLevel reads an answer's top-level object: the array under key
// streamed is handed to each item by item (so a large answer is not
// copied whole once more), every other field is kept for an obj. It fails
// only when the answer is not a JSON object.
func (d *dec) topLevel(b []byte, known []string, streamed string, each func(item any)) (obj, bool, error) {
	jd := json.NewDecoder(bytes.NewReader(b))
	jd.UseNumber()
	if t, err := jd.Token(); err != nil || t != json.Delim('{') {
		return obj{}, false, errors.New("not a JSON object")
	}
	m := map[string]any{}
	found := false
	for jd.More() {
		t, err := jd.Token()
		if err != nil {
			return obj{}, false, fmt.Errorf("bad JSON: %w", err)
		}
		k, _ := t.(string)
		p := safeKey(k)
		d.shape.field(p)
		if !contains(known, k) {
			d.shape.add(ReasonUnknownField, p)
		}
		if k != streamed {
			var v any
			if err := jd.Decode(&v); err != nil {
				return obj{}, false, fmt.Errorf("bad JSON: %w", err)
			}
			m[k] = v
			continue
		}
		// The streamed array: an object, null or another type is a
		// type mismatch (or missing) the caller reports.
		t, err = jd.Token()
		if err != nil {
			return obj{}, false, fmt.Errorf("bad JSON: %w", err)
		}
		if t != json.Delim('[') {
			if t == nil {
				continue // null: as if absent
			}
			if t == json.Delim('{') {
				if err := skipRest(jd, 1); err != nil {
					return obj{}, false, err
				}
			}
			m[k] = "not an array"
			continue
		}
		found = true
		for jd.More() {
			var item any
			if err := jd.Decode(&item); err != nil {
				return obj{}, false, fmt.Errorf("bad JSON: %w", err)
			}
			if item == nil {
				d.shape.add(ReasonNullItem, p+"[]")
				continue
			}
			each(item)
		}
		if _, err := jd.Token(); err != nil {
			return obj{}, false, fmt.Errorf("bad JSON: %w", err)
		}
	}
	if _, err := jd.Token(); err != nil {
		return obj{}, false, fmt.Errorf("bad JSON: %w", err)
	}
	if _, err := jd.Token(); err == nil {
		return obj{}, false, errors.New("bad JSON: data after the object")
	}
	return obj{d: d, m: m}, found, nil
}

// skipRest skips tokens until depth open delimiters are closed.
func skipRest(jd *json.Decoder, depth int) error {
	for depth > 0 {
		t, err := jd.Token()
		if err != nil {
			return fmt.Errorf("bad JSON: %w", err)
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}
