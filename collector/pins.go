package collector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// Every counted thing has an identity and counts once, under the labels it
// had when it was first counted (design.md, "Counting rules"). A thread's
// items (thread.Item: its messages, ledger events, tool results and
// exchanges) are pinned here: the labels an item is first counted under,
// folded by the label cap at that moment, are remembered by its key, and
// every later snapshot attributes the item's values to those labels. A
// stop reason that turns into `cancelled`, a model filled in late, or a
// value that leaves `other` because the cap was raised then moves nothing
// between series, and the per-series max-merge of Apply stays exact.
//
// The pins are kept compactly: a store-wide table of distinct label tuples,
// and per thread a small table of the tuples it uses, a uint16 per message
// (indexed by messageId, which Amp numbers 0, 1, 2, …) and a key and a
// uint16 per other item.

// pinTuple is the labels an item was first counted under, folded. For an
// assistant message: model, stop_reason ("" until it finishes) and context
// bucket ("" until it is observed); for a ledger event: model; for a tool
// result: tool and status; for an exchange: its bucket. copied marks items
// a fork copied from its parent: they count nothing, whatever later
// rewrites say.
type pinTuple struct {
	a, b, c string
	copied  bool
}

// tupleTable numbers the distinct tuples of a store.
type tupleTable struct {
	mu     sync.RWMutex
	ids    map[pinTuple]uint32
	tuples []pinTuple
}

func (t *tupleTable) id(p pinTuple) uint32 {
	t.mu.RLock()
	id, ok := t.ids[p]
	t.mu.RUnlock()
	if ok {
		return id
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.ids[p]; ok {
		return id
	}
	if t.ids == nil {
		t.ids = map[pinTuple]uint32{}
	}
	id = uint32(len(t.tuples))
	t.ids[p] = id
	t.tuples = append(t.tuples, p)
	return id
}

func (t *tupleTable) get(id uint32) pinTuple {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.tuples[id]
}

// maxDenseMessage bounds the messageIds kept in a thread's dense table;
// larger ones (or none) are kept by key.
const maxDenseMessage = 1 << 16

// pins are one thread's pinned items. A published pins is never changed:
// an Apply that pins new items makes a new one (copy on write), so that
// contributions can be worked out without the store's lock.
type pins struct {
	local []uint32 // local tuple number → store tuple id
	msg   []uint16 // messageId → local tuple number + 1; 0 when not pinned
	keys  []uint64 // other items, sorted
	idx   []uint16 // local tuple number + 1, by keys
}

// lookup returns the local tuple number + 1 of an item, 0 when unpinned.
func (p *pins) lookup(key uint64) uint16 {
	if p == nil {
		return 0
	}
	if id, dense := denseMessage(key); dense {
		if id < uint64(len(p.msg)) {
			return p.msg[id]
		}
		return 0
	}
	if i, ok := slices.BinarySearch(p.keys, key); ok {
		return p.idx[i]
	}
	return 0
}

func denseMessage(key uint64) (uint64, bool) {
	if thread.ItemKind(key>>60) != thread.ItemMessage {
		return 0, false
	}
	id := key & (1<<60 - 1)
	return id, id < maxDenseMessage
}

// bytes is the memory the pins hold.
func (p *pins) bytes() int {
	if p == nil {
		return 0
	}
	return 4*cap(p.local) + 2*cap(p.msg) + 8*cap(p.keys) + 2*cap(p.idx) + 4*24
}

// pinning collects the pins one Apply adds to a thread.
type pinning struct {
	base  *pins
	local []uint32 // base.local, extended
	byID  map[uint32]uint16
	set   map[uint64]uint16 // new and changed pins
}

func newPinning(base *pins) *pinning {
	pg := &pinning{base: base}
	if base != nil {
		pg.local = base.local
	}
	return pg
}

// lookup returns the tuple an item is pinned to, and whether it is.
func (pg *pinning) lookup(tt *tupleTable, key uint64) (pinTuple, bool) {
	n, ok := pg.set[key]
	if !ok {
		n = pg.base.lookup(key)
	}
	if n == 0 {
		return pinTuple{}, false
	}
	return tt.get(pg.local[n-1]), true
}

// pin pins an item to a tuple.
func (pg *pinning) pin(tt *tupleTable, key uint64, t pinTuple) {
	id := tt.id(t)
	if pg.byID == nil {
		pg.byID = make(map[uint32]uint16, len(pg.local)+4)
		for i, g := range pg.local {
			pg.byID[g] = uint16(i + 1)
		}
	}
	n, ok := pg.byID[id]
	if !ok {
		if len(pg.local) >= 1<<16-1 {
			return // a thread of 65,535 distinct label sets: leave the item unpinned
		}
		pg.local = append(pg.local[:len(pg.local):len(pg.local)], id)
		n = uint16(len(pg.local))
		pg.byID[id] = n
	}
	if pg.set == nil {
		pg.set = map[uint64]uint16{}
	}
	pg.set[key] = n
}

// result returns the thread's pins with the new ones, or the old pins when
// nothing was pinned.
func (pg *pinning) result() *pins {
	if len(pg.set) == 0 {
		return pg.base
	}
	out := &pins{local: pg.local}
	var sparse []uint64
	maxDense := -1
	for k := range pg.set {
		if id, dense := denseMessage(k); dense {
			maxDense = max(maxDense, int(id))
		} else {
			sparse = append(sparse, k)
		}
	}
	var baseMsg []uint16
	var baseKeys []uint64
	var baseIdx []uint16
	if pg.base != nil {
		baseMsg, baseKeys, baseIdx = pg.base.msg, pg.base.keys, pg.base.idx
	}
	out.msg = baseMsg
	if maxDense >= 0 {
		out.msg = make([]uint16, max(len(baseMsg), maxDense+1))
		copy(out.msg, baseMsg)
		for k, n := range pg.set {
			if id, dense := denseMessage(k); dense {
				out.msg[id] = n
			}
		}
	}
	out.keys, out.idx = baseKeys, baseIdx
	if len(sparse) > 0 {
		slices.Sort(sparse)
		keys := make([]uint64, 0, len(baseKeys)+len(sparse))
		idx := make([]uint16, 0, len(baseKeys)+len(sparse))
		i := 0
		for _, k := range sparse {
			for i < len(baseKeys) && baseKeys[i] < k {
				keys, idx = append(keys, baseKeys[i]), append(idx, baseIdx[i])
				i++
			}
			if i < len(baseKeys) && baseKeys[i] == k {
				i++ // changed
			}
			keys, idx = append(keys, k), append(idx, pg.set[k])
		}
		keys, idx = append(keys, baseKeys[i:]...), append(idx, baseIdx[i:]...)
		out.keys, out.idx = keys, idx
	}
	return out
}

// PinnedTuple is one persisted label tuple.
type PinnedTuple struct {
	A      string `json:"a,omitempty"`
	B      string `json:"b,omitempty"`
	C      string `json:"c,omitempty"`
	Copied bool   `json:"copied,omitempty"`
}

// PinState is the persisted form of a thread's pins. The tables are
// uvarint-encoded (keys as ascending deltas), base64 in JSON.
type PinState struct {
	Tuples   []PinnedTuple `json:"tuples"`
	Messages []byte        `json:"messages,omitempty"` // per messageId: local tuple number + 1, 0 unpinned
	Keys     []byte        `json:"keys,omitempty"`
	Index    []byte        `json:"index,omitempty"` // per key: local tuple number + 1
}

func (p *pins) export(tt *tupleTable) *PinState {
	if p == nil {
		return nil
	}
	st := &PinState{Tuples: make([]PinnedTuple, len(p.local))}
	for i, id := range p.local {
		t := tt.get(id)
		st.Tuples[i] = PinnedTuple{A: t.a, B: t.b, C: t.c, Copied: t.copied}
	}
	var buf []byte
	for _, n := range p.msg {
		buf = binary.AppendUvarint(buf, uint64(n))
	}
	st.Messages = buf
	buf = nil
	var prev uint64
	for _, k := range p.keys {
		buf = binary.AppendUvarint(buf, k-prev)
		prev = k
	}
	st.Keys = buf
	buf = nil
	for _, n := range p.idx {
		buf = binary.AppendUvarint(buf, uint64(n))
	}
	st.Index = buf
	return st
}

var errPins = errors.New("damaged pins")

// decodePins checks a persisted pin state and decodes it without touching
// any store (the tuple ids are filled in by install).
func decodePins(st *PinState) (*pins, error) {
	if st == nil {
		return nil, nil
	}
	if len(st.Tuples) >= 1<<16 {
		return nil, fmt.Errorf("%w: %d tuples", errPins, len(st.Tuples))
	}
	nums := func(b []byte) ([]uint16, error) {
		var out []uint16
		for len(b) > 0 {
			v, n := binary.Uvarint(b)
			if n <= 0 || v > uint64(len(st.Tuples)) {
				return nil, fmt.Errorf("%w: tuple number out of range", errPins)
			}
			out = append(out, uint16(v))
			b = b[n:]
		}
		return out, nil
	}
	p := &pins{}
	var err error
	if p.msg, err = nums(st.Messages); err != nil {
		return nil, err
	}
	if len(p.msg) > maxDenseMessage {
		return nil, fmt.Errorf("%w: message table too long", errPins)
	}
	if p.idx, err = nums(st.Index); err != nil {
		return nil, err
	}
	var prev uint64
	for b := st.Keys; len(b) > 0; {
		d, n := binary.Uvarint(b)
		if n <= 0 || (len(p.keys) > 0 && d == 0) || prev+d < prev {
			return nil, fmt.Errorf("%w: keys not ascending", errPins)
		}
		prev += d
		p.keys = append(p.keys, prev)
		b = b[n:]
	}
	if len(p.keys) != len(p.idx) {
		return nil, fmt.Errorf("%w: %d keys, %d tuple numbers", errPins, len(p.keys), len(p.idx))
	}
	for _, n := range p.idx {
		if n == 0 {
			return nil, fmt.Errorf("%w: key without a tuple", errPins)
		}
	}
	return p, nil
}

// install numbers a decoded pin state's tuples in the store's table.
func (p *pins) install(tt *tupleTable, st *PinState) {
	p.local = make([]uint32, len(st.Tuples))
	for i, t := range st.Tuples {
		p.local[i] = tt.id(pinTuple{a: t.A, b: t.B, c: t.C, copied: t.Copied})
	}
}
