package config

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

// document is a configuration file read as a yaml.Node: where each key
// is, so that every error can name the line and the key.
type document struct {
	root *yaml.Node
	// keyLine maps a key path (threads.poll_interval, amy[0].name,
	// amy["main"].name, pricing.models["x"].input) to the line of the key.
	keyLine map[string]int
	// valueKey maps a line to the deepest key path whose value starts there.
	valueKey map[int]string
}

// errSecondDocument is returned for a file with more than one YAML
// document: amp-exporter reads exactly one.
var errSecondDocument = errors.New("a second YAML document (after ---); a configuration file holds one document")

// parseDocument reads data as exactly one YAML document. It returns nil,
// nil for a file without one (empty, or only comments).
func parseDocument(data []byte) (*document, error) {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, err
	case !emptyDocument(&second):
		return nil, fmt.Errorf("line %d: %w", second.Line, errSecondDocument)
	}
	d := &document{root: &root, keyLine: map[string]int{}, valueKey: map[int]string{}}
	if len(root.Content) > 0 {
		d.index(root.Content[0], "")
	}
	return d, nil
}

// emptyDocument reports whether a document holds nothing (a trailing ---).
func emptyDocument(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func joinKey(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func (d *document) index(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			// Both spellings: a section's key and a map entry's key.
			for _, p := range []string{joinKey(path, k.Value), fmt.Sprintf("%s[%q]", path, k.Value)} {
				d.keyLine[p] = k.Line
			}
			p := joinKey(path, k.Value)
			d.valueKey[v.Line] = p
			d.index(v, p)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.keyLine[p] = v.Line
			d.index(v, p)
			// A list entry with a name (amy upstreams) is also found by it.
			if v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					if v.Content[j].Value == "name" && v.Content[j+1].Kind == yaml.ScalarNode {
						d.alias(p, fmt.Sprintf("%s[%q]", path, v.Content[j+1].Value))
					}
				}
			}
		}
	}
}

// alias makes every key under from also known under to.
func (d *document) alias(from, to string) {
	for k, line := range d.keyLine {
		if k == from || strings.HasPrefix(k, from+".") || strings.HasPrefix(k, from+"[") {
			d.keyLine[to+strings.TrimPrefix(k, from)] = line
		}
	}
}

// leadingKey is the key path a validation message starts with.
var leadingKey = regexp.MustCompile(`^[a-z_]+(?:\.[a-z_]+|\[(?:\d+|"(?:[^"\\]|\\.)*")\])*`)

// locate prefixes a validation message with the line of the key it names,
// or of the nearest enclosing key the file has (a key left out takes its
// default, so the error is about the section around it).
func (d *document) locate(msg string) string {
	if d == nil {
		return msg
	}
	key := leadingKey.FindString(msg)
	for key != "" {
		if line, ok := d.keyLine[key]; ok {
			return fmt.Sprintf("line %d: %s", line, msg)
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return msg
}

var lineMessage = regexp.MustCompile(`^line (\d+): `)

// nameKey adds the key to a decoder message that names only the line
// ("line 3: cannot unmarshal !!str `x` into int").
func (d *document) nameKey(msg string) string {
	g := lineMessage.FindStringSubmatch(msg)
	if d == nil || g == nil {
		return msg
	}
	line, _ := strconv.Atoi(g[1])
	key, ok := d.valueKey[line]
	if !ok || strings.Contains(msg, key) {
		return msg
	}
	return fmt.Sprintf("line %d: %s: %s", line, key, strings.TrimPrefix(msg, g[0]))
}

var (
	durationType = reflect.TypeOf(model.Duration(0))
	byteSizeType = reflect.TypeOf(ByteSize(0))
)

// checkValues walks the document along the Config type and checks the
// values the decoder would refuse without naming their key (durations,
// sizes): a negative or zero duration is an error naming its line and
// key. Leave a key out to get its default.
func (d *document) checkValues() []string {
	if d == nil || len(d.root.Content) == 0 {
		return nil
	}
	var errs []string
	checkNode(d.root.Content[0], reflect.TypeOf(Config{}), "", &errs)
	return errs
}

func checkNode(n *yaml.Node, t reflect.Type, path string, errs *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case durationType:
		if n.Kind != yaml.ScalarNode {
			return // the decoder names the line
		}
		v := strings.TrimSpace(n.Value)
		if strings.HasPrefix(v, "-") {
			*errs = append(*errs, fmt.Sprintf("line %d: %s: %q is negative; a duration is like 30s, 5m or 1h", n.Line, path, v))
			return
		}
		dur, err := model.ParseDuration(v)
		switch {
		case err != nil:
			*errs = append(*errs, fmt.Sprintf("line %d: %s: %q is not a duration; write it like 30s, 5m or 1h", n.Line, path, v))
		case dur == 0:
			*errs = append(*errs, fmt.Sprintf("line %d: %s: a zero duration is not allowed; leave the key out for its default", n.Line, path))
		case time.Duration(dur) < 0:
			*errs = append(*errs, fmt.Sprintf("line %d: %s: %q is out of range", n.Line, path, v))
		}
		return
	case byteSizeType:
		if n.Kind != yaml.ScalarNode {
			return
		}
		if _, err := ParseByteSize(n.Value); err != nil {
			*errs = append(*errs, fmt.Sprintf("line %d: %s: %v", n.Line, path, err))
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if f, ok := fieldByKey(t, k.Value); ok {
				checkNode(v, f.Type, joinKey(path, k.Value), errs)
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, v := range n.Content {
			checkNode(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkNode(n.Content[i+1], t.Elem(), fmt.Sprintf("%s[%q]", path, n.Content[i].Value), errs)
		}
	}
}

// fieldByKey finds the struct field a YAML key decodes into.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// validationErrors are the problems resolve found, each starting with the
// key it is about.
type validationErrors struct {
	msgs []string
	doc  *document
}

func (e *validationErrors) Error() string {
	out := make([]string, len(e.msgs))
	for i, m := range e.msgs {
		out[i] = e.doc.locate(m)
	}
	return strings.Join(out, "; ")
}

// decodeFile decodes one YAML document onto cfg. Values the decoder would
// refuse without naming their key are checked first, so every error names
// the line and the key.
func decodeFile(data []byte, cfg *Config) (*document, error) {
	doc, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, nil // empty: all defaults
	}
	if errs := doc.checkValues(); len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "; "))
	}
	if err := decode(data, cfg, doc); err != nil {
		return nil, err
	}
	return doc, nil
}
