package thread

import (
	"hash/fnv"
	"slices"

	"github.com/amp-exporter/amp-exporter/internal/labelvalue"
	"github.com/amp-exporter/amp-exporter/parser/toolname"
)

// MaxModelsPerFile is the per-file budget of distinct model names (and,
// apart, of tool names): the names past it are folded into FoldedModel
// while the file is parsed, so
// one thread naming a different model in each of its messages (292,794 of
// them held the process at ~1 GB) costs no more than a thread with this
// many. Far above any real thread, and above limits.max_label_values'
// default: a value folded here would have been folded into "other" by the
// label cap too.
const MaxModelsPerFile = 1024

// FoldedModel stands for the model names past the per-file budget. It is
// the store's label cap's "other".
const FoldedModel = "other"

// valueBudget holds the distinct names of one label of the file being parsed.
type valueBudget struct {
	names  map[string]string
	folded []uint64 // FNV-1a hashes of the names folded, deduplicated at the end
}

func (b *valueBudget) reset() {
	if b.names == nil || len(b.names) > MaxModelsPerFile {
		b.names = make(map[string]string)
	} else {
		clear(b.names)
	}
	b.folded = nil
}

// model returns the string for a model name, or FoldedModel once the
// file's budget of distinct names is spent.
func (p *Parser) model(v []byte) string { return p.budgeted(&p.models, v, nil) }

// tool is model for tool names; a folded one is counted under its
// normalized name, as the store counts tool names.
func (p *Parser) tool(v []byte) string { return p.budgeted(&p.tools, v, toolname.Normalize) }

func (p *Parser) budgeted(b *valueBudget, v []byte, normalize func(string) string) string {
	if s, ok := b.names[string(v)]; ok {
		return s
	}
	if len(b.names) >= MaxModelsPerFile {
		if normalize != nil {
			v = []byte(normalize(string(v)))
		}
		b.folded = append(b.folded, foldedHash(v))
		return FoldedModel
	}
	s := p.str(v)
	b.names[s] = s
	return s
}

// foldedHash hashes a folded name as the store's label cap hashes a value it folds
// itself: its label value, sanitized by the same function.
func foldedHash(v []byte) uint64 {
	h := fnv.New64a()
	h.Write([]byte(labelvalue.Sanitize(string(v))))
	return h.Sum64()
}

// foldedModels returns the distinct hashes of the names folded in the file.
func (b *valueBudget) foldedValues() []uint64 {
	if len(b.folded) == 0 {
		return nil
	}
	slices.Sort(b.folded)
	return slices.Compact(b.folded)
}
