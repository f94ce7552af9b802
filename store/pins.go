package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Every counted thing has an identity and counts once, under the labels it
// had when it was first counted (docs/counting.md, rule 1). A thread's
// items (thread.Item: its messages, ledger events, tool results and
// exchanges) are pinned here: the labels an item is first counted under,
// folded by the label cap at that moment, are remembered by its key, and
// every later snapshot attributes the item's values to those labels. A
// stop reason that turns into `cancelled`, a model filled in late, or a
// value that leaves `other` because the cap was raised then moves nothing
// between series, and the per-series max-merge of Apply stays exact.
//
// The pins are kept compactly, as they must be for every thread ever seen:
// a store-wide table of distinct label tuples, and per thread one byte
// string (pinBlob) of the tuples it uses and its items sorted by key, delta
// and uvarint encoded. Keys are mostly small and dense (messageIds, tool
// calls by their message), so an item costs two or three bytes. Each Apply
// decodes the blob of its thread into reusable tables, and encodes a new
// one only when it pinned something.

// pinTuple is the labels an item was first counted under, folded. For an
// assistant message: model, stop_reason ("" until it finishes) and context
// bucket ("" until it is observed); for a ledger event: model; for a tool
// result: tool and status, and in bucket the model that made the call for
// an edit that ran to the end (its lines count by model); for an exchange:
// its bucket. none marks items
// that count nothing, whatever later rewrites say: those a fork copied
// from its parent, and those that left the file (their count is kept in
// the thread's retired part, so if an older version of the file brings them
// back they must not count again).
type pinTuple struct {
	// name is a message's model, or a tool result's tool.
	name string
	// outcome is a message's stop reason, or a tool result's status.
	outcome string
	// bucket is a message's context-window bucket, an exchange's
	// duration bucket, or an edit tool result's model.
	bucket string
	none   bool
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

// maxLocalTuples bounds the distinct tuples of one thread; an item that
// would need more is counted under its current labels, unpinned.
const maxLocalTuples = 1<<16 - 1

// pinBlob is one thread's pins: uvarint(number of tuples), the store tuple
// id of each, then per item, by ascending key, uvarint(key − previous key)
// and uvarint(local tuple number + 1). A published blob is never changed.
type pinBlob []byte

// decodedPins is a blob decoded for one Apply, with the tables the Apply
// adds its items up in, by local tuple number (pooled, so that a steady
// stream of rewrites allocates little).
type decodedPins struct {
	local  []uint32
	tuples []pinTuple // by local number, resolved once per Apply
	keys   []uint64
	ns     []uint16

	spend []spendAcc // assistant messages and ledger events
	tools []int64    // tool results
	exch  []exchAcc  // exchanges
	seen  []bool     // by keys: the item is in the snapshot
	fresh []int32    // the snapshot's items that were not pinned before
}

// spendAcc adds up what the items pinned to one tuple spent.
type spendAcc struct {
	any               bool
	finished, ctx     int64
	ctxSum            int64
	tokens, long      [4]int64
	stdCost, longCost [4]int64
	unpriced          [4]int64
	credits           float64
	hasCredits        bool
	// speed holds the part of the above that ran at a faster speed
	// (speedFamilies' order), with what the speed added to its cost.
	speed [len(speedFamilies)]speedAcc
}

// speedAcc is the spending of a tuple's messages that ran at one faster
// speed: its tokens (long: those past the long-context threshold), what
// they cost at that speed, and what the speed added to it.
type speedAcc struct {
	tokens, long      [4]int64
	stdCost, longCost [4]int64
	premStd, premLong [4]int64
	unpriced          [4]int64
}

type exchAcc struct{ n, sum int64 }

var decodedPool = sync.Pool{New: func() any { return new(decodedPins) }}

var errPins = errors.New("damaged pins")

// decodeEntries appends the items of an encoded entry list to d, checking
// that keys ascend and tuple numbers are within tuples.
func (d *decodedPins) decodeEntries(b []byte, tuples int) error {
	var prev uint64
	for len(b) > 0 {
		delta, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("%w: bad key", errPins)
		}
		b = b[n:]
		num, n := binary.Uvarint(b)
		if n <= 0 || num == 0 || num > uint64(tuples) {
			return fmt.Errorf("%w: tuple number out of range", errPins)
		}
		b = b[n:]
		if (len(d.keys) > 0 && delta == 0) || prev+delta < prev {
			return fmt.Errorf("%w: keys not ascending", errPins)
		}
		prev += delta
		d.keys = append(d.keys, prev)
		d.ns = append(d.ns, uint16(num))
	}
	return nil
}

// decode reads a blob the store wrote.
func (d *decodedPins) decode(p pinBlob) {
	d.local, d.keys, d.ns = d.local[:0], d.keys[:0], d.ns[:0]
	if len(p) == 0 {
		return
	}
	count, n := binary.Uvarint(p)
	p = p[n:]
	for i := uint64(0); i < count; i++ {
		id, n := binary.Uvarint(p)
		d.local = append(d.local, uint32(id))
		p = p[n:]
	}
	if err := d.decodeEntries(p, len(d.local)); err != nil {
		panic(err) // the store wrote it: a bug, not bad input
	}
}

// encode writes the blob of d's tables.
func (d *decodedPins) encode() pinBlob {
	out := make([]byte, 0, 2+2*len(d.local)+3*len(d.keys))
	out = binary.AppendUvarint(out, uint64(len(d.local)))
	for _, id := range d.local {
		out = binary.AppendUvarint(out, uint64(id))
	}
	var prev uint64
	for i, k := range d.keys {
		out = binary.AppendUvarint(out, k-prev)
		out = binary.AppendUvarint(out, uint64(d.ns[i]))
		prev = k
	}
	return slices.Clip(out)
}

// pinning is the pins of one thread while an Apply works out its
// contribution: the decoded blob, and what the Apply pins.
type pinning struct {
	base    pinBlob
	dec     *decodedPins
	byTuple map[pinTuple]uint16 // local numbers + 1, once a thread has many
	set     map[uint64]uint16   // new and changed pins
	expect  int                 // how many items may be pinned
	// adopted maps an item that took over its alias's pin (adopt) to the
	// alias's place among the pins the Apply started from: the item is
	// not new, and the alias is not gone.
	adopted map[uint64]int
	// unkept: the items' tuples are numbered but not pinned to their keys
	// (StoreOptions.AppliedOnce: no later snapshot reads the pins).
	unkept bool
}

func newPinning(tt *tupleTable, base pinBlob) *pinning {
	d := decodedPool.Get().(*decodedPins)
	d.decode(base)
	d.tuples = d.tuples[:0]
	tt.mu.RLock()
	for _, id := range d.local {
		d.tuples = append(d.tuples, tt.tuples[id])
	}
	tt.mu.RUnlock()
	return &pinning{base: base, dec: d}
}

// lookup returns the local number (+ 1) of the tuple an item is pinned to,
// 0 when it is not pinned, and its place among the pins the Apply started
// from (-1 when it was not pinned then).
func (pg *pinning) lookup(key uint64) (n uint16, at int) {
	at = -1
	if i, found := slices.BinarySearch(pg.dec.keys, key); found {
		n, at = pg.dec.ns[i], i
	}
	if m, ok := pg.set[key]; ok {
		n = m
		if a, ok := pg.adopted[key]; ok && at < 0 {
			at = a
		}
	}
	return n, at
}

// tuple returns the tuple of a local number (+ 1).
func (pg *pinning) tuple(n uint16) pinTuple { return pg.dec.tuples[n-1] }

// pin pins an item to a tuple and returns its local number (+ 1), 0 when
// the thread has too many tuples to pin it.
func (pg *pinning) pin(tt *tupleTable, key uint64, t pinTuple) uint16 {
	n := pg.local(tt, t)
	if n == 0 || pg.unkept {
		return n
	}
	if pg.set == nil {
		pg.set = make(map[uint64]uint16, pg.expect)
	}
	pg.set[key] = n
	return n
}

// local returns the local number (+ 1) of a tuple, adding it to the
// thread's table; 0 when the table is full. A thread uses a few dozen
// tuples: a scan finds them faster than hashing three strings.
func (pg *pinning) local(tt *tupleTable, t pinTuple) uint16 {
	d := pg.dec
	if pg.byTuple == nil {
		for i := range d.tuples {
			if d.tuples[i] == t {
				return uint16(i + 1)
			}
		}
		if len(d.tuples) >= 32 {
			pg.byTuple = make(map[pinTuple]uint16, 2*len(d.tuples))
			for i, u := range d.tuples {
				pg.byTuple[u] = uint16(i + 1)
			}
		}
	} else if n, ok := pg.byTuple[t]; ok {
		return n
	}
	if len(d.local) >= maxLocalTuples {
		return 0
	}
	d.local = append(d.local, tt.id(t))
	d.tuples = append(d.tuples, t)
	n := uint16(len(d.local))
	if pg.byTuple != nil {
		pg.byTuple[t] = n
	}
	return n
}

// result returns the thread's pins with the new ones (the base blob when
// nothing was pinned) and gives the tables back.
func (pg *pinning) result() pinBlob {
	d := pg.dec
	defer decodedPool.Put(d)
	if len(pg.set) == 0 {
		return pg.base
	}
	added := make([]uint64, 0, len(pg.set))
	for k := range pg.set {
		added = append(added, k)
	}
	slices.Sort(added)
	keys := make([]uint64, 0, len(d.keys)+len(added))
	ns := make([]uint16, 0, len(d.keys)+len(added))
	i := 0
	for _, k := range added {
		for i < len(d.keys) && d.keys[i] < k {
			keys, ns = append(keys, d.keys[i]), append(ns, d.ns[i])
			i++
		}
		if i < len(d.keys) && d.keys[i] == k {
			i++ // re-pinned
		}
		keys, ns = append(keys, k), append(ns, pg.set[k])
	}
	keys, ns = append(keys, d.keys[i:]...), append(ns, d.ns[i:]...)
	d.keys, d.ns = keys, ns
	return d.encode()
}

// PinState is the persisted form of a thread's pins, self-contained and
// compact (base64 in JSON): Strings are the label values its tuples use;
// Tuples encodes each tuple as three uvarints, (index of a + 1) << 1 |
// none, index of b + 1 and index of c + 1 (0 for an empty value); Items
// lists its items by ascending key as uvarint(key − previous key) and
// uvarint(tuple number + 1).
type PinState struct {
	Strings []string `json:"strings,omitempty"`
	Tuples  []byte   `json:"tuples"`
	Items   []byte   `json:"items"`
}

func (p pinBlob) export(tt *tupleTable) *PinState {
	if len(p) == 0 {
		return nil
	}
	count, n := binary.Uvarint(p)
	p = p[n:]
	st := &PinState{}
	index := map[string]uint64{}
	str := func(v string) uint64 {
		if v == "" {
			return 0
		}
		i, ok := index[v]
		if !ok {
			st.Strings = append(st.Strings, v)
			i = uint64(len(st.Strings))
			index[v] = i
		}
		return i
	}
	for range count {
		id, n := binary.Uvarint(p)
		p = p[n:]
		t := tt.get(uint32(id))
		first := str(t.name) << 1
		if t.none {
			first |= 1
		}
		st.Tuples = binary.AppendUvarint(st.Tuples, first)
		st.Tuples = binary.AppendUvarint(st.Tuples, str(t.outcome))
		st.Tuples = binary.AppendUvarint(st.Tuples, str(t.bucket))
	}
	st.Items = slices.Clone(p)
	return st
}

// tuples decodes a persisted state's tuples.
func (st *PinState) tuples() ([]pinTuple, error) {
	var out []pinTuple
	b := st.Tuples
	next := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, fmt.Errorf("%w: bad tuple", errPins)
		}
		b = b[n:]
		return v, nil
	}
	get := func(i uint64) (string, error) {
		if i == 0 {
			return "", nil
		}
		if i > uint64(len(st.Strings)) {
			return "", fmt.Errorf("%w: string index out of range", errPins)
		}
		return restoredLabel(st.Strings[i-1]), nil
	}
	for len(b) > 0 {
		if len(out) >= maxLocalTuples {
			return nil, fmt.Errorf("%w: too many tuples", errPins)
		}
		var idx [3]uint64
		for j := range idx {
			v, err := next()
			if err != nil {
				return nil, err
			}
			idx[j] = v
		}
		var t pinTuple
		t.none = idx[0]&1 == 1
		var err error
		if t.name, err = get(idx[0] >> 1); err != nil {
			return nil, err
		}
		if t.outcome, err = get(idx[1]); err != nil {
			return nil, err
		}
		if t.bucket, err = get(idx[2]); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// checkPins validates a persisted pin state without touching any store.
func checkPins(st *PinState) error {
	if st == nil {
		return nil
	}
	tuples, err := st.tuples()
	if err != nil {
		return err
	}
	var d decodedPins
	return d.decodeEntries(st.Items, len(tuples))
}

// importPins turns a checked pin state into a blob of this store.
func importPins(tt *tupleTable, st *PinState) pinBlob {
	if st == nil {
		return nil
	}
	tuples, _ := st.tuples()
	out := binary.AppendUvarint(nil, uint64(len(tuples)))
	for _, t := range tuples {
		out = binary.AppendUvarint(out, uint64(tt.id(t)))
	}
	return slices.Clip(append(out, st.Items...))
}
