package store

import (
	"cmp"
	"slices"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// contribute turns a summary into series item by item: each item's values
// go to the labels it is pinned to (pins.go), and an item seen for the first
// time is pinned to the labels it carries now, folded by the label cap. Token
// series are priced with prices, at the price of the model each item names.
// It returns the thread's pins with the new ones; base is never changed.
//
// When items pinned before are missing from the snapshot (the thread was
// truncated: an edited prompt drops what followed it), it also returns the
// part of the contribution that comes from items new in this snapshot, so
// that Apply can keep what the missing items counted and add the new ones
// in full (see retire).
//
// A partial summary (a window of the thread, window.go) lacks items by
// design: none of its thread's items is taken for missing.
//
// Items are added up per pinned tuple first, so that the series map sees
// one entry per tuple rather than per item.
//
// reidentified reports a snapshot in which every message the thread had is
// gone and every message is new and keyed by a protocol id: the whole
// thread changed identity at once (see Apply).
func (s *ThreadStore) contribute(sum *thread.Summary, prices Prices, base pinBlob, partial bool) (c contribution, rates map[SeriesKey]rate, pinned pinBlob, fresh contribution, vanished, reidentified bool) {
	c = make(contribution, 24+len(sum.Tokens)*12+len(sum.ToolCalls)*2)
	rates = make(map[SeriesKey]rate, 4*len(sum.Tokens))
	add := func(f Family, l1, l2 string, v int64) {
		if v > 0 {
			k := SeriesKey{f, l1, l2}
			c[k] = satAdd(c[k], v)
		}
	}
	// Unit prices per model the items name; a thread names a few.
	type unit struct {
		model     string
		std, long [4]int64
		ok        bool
	}
	var units []unit
	priceOf := func(model string) *unit {
		for i := range units {
			if units[i].model == model {
				return &units[i]
			}
		}
		u := unit{model: model}
		u.std, u.long, u.ok = unitPrices(prices, model)
		units = append(units, u)
		return &units[len(units)-1]
	}
	spend := func(a *spendAcc, it *thread.Item) {
		a.any = true
		if it.HasCredits {
			a.credits += it.Credits
			a.hasCredits = true
		}
		if it.Tokens == (thread.Tokens{}) {
			return
		}
		raw := it.Model
		if raw == "" {
			raw = thread.UnknownModel
		}
		u := priceOf(raw)
		ns := [4]int64{it.Tokens.Input, it.Tokens.Output, it.Tokens.CacheRead, it.Tokens.CacheCreation}
		over := [4]int64{it.Over.Input, it.Over.Output, it.Over.CacheRead, it.Over.CacheCreation}
		for i, n := range ns {
			if n <= 0 {
				continue
			}
			nl := min(max(over[i], 0), n)
			a.tokens[i] = satAdd(a.tokens[i], n)
			a.long[i] = satAdd(a.long[i], nl)
			if u.ok {
				a.stdCost[i] = satAdd(a.stdCost[i], satMul(n-nl, u.std[i]))
				a.longCost[i] = satAdd(a.longCost[i], satMul(nl, u.long[i]))
			} else {
				a.unpriced[i] = satAdd(a.unpriced[i], n)
			}
		}
	}
	// emit turns the sums of one tuple's spending into series.
	emit := func(t pinTuple, a *spendAcc) {
		for i, n := range a.tokens {
			if n <= 0 {
				continue
			}
			k := SeriesKey{FamTokens, t.a, TokenTypes[i]}
			add(FamTokens, t.a, TokenTypes[i], n)
			add(FamTokensLong, t.a, TokenTypes[i], a.long[i])
			r := rates[k]
			r.std.tokens = satAdd(r.std.tokens, n-a.long[i])
			r.long.tokens = satAdd(r.long.tokens, a.long[i])
			r.std.cost = satAdd(r.std.cost, a.stdCost[i])
			r.long.cost = satAdd(r.long.cost, a.longCost[i])
			r.unpriced = satAdd(r.unpriced, a.unpriced[i])
			rates[k] = r
		}
		if a.hasCredits {
			add(FamCredits, t.a, "", fixed(FamCredits, a.credits))
		}
		add(FamFinished, t.a, t.b, a.finished)
		add(FamContextBucket, t.a, t.c, a.ctx)
		add(FamContextSum, t.a, "", a.ctxSum)
	}

	tt := &s.tuples
	pg := newPinning(tt, base)
	pg.expect = max(len(sum.Items)-len(pg.dec.keys), 8)
	// Folded label values, remembered for this summary: it names a few.
	type folding struct{ label, raw, value string }
	var folds []folding
	fold := func(label, raw string) string {
		for _, f := range folds {
			if f.raw == raw && f.label == label {
				return f.value
			}
		}
		v := s.labels.value(label, raw)
		if len(folds) < 64 {
			folds = append(folds, folding{label, raw, v})
		}
		return v
	}
	d := pg.dec
	d.seen = grow(d.seen[:0], len(d.keys))
	d.fresh = d.fresh[:0]
	s.adopt(sum, pg, fold)
	ctxScale, exchScale := scaleOf(FamContextSum), scaleOf(FamExchangeSum)
	// pass adds up the items of sum into c: all of them, or those listed in
	// only.
	pass := func(all bool, only []int32) {
		d.spend = grow(d.spend[:0], len(d.tuples))
		d.tools = grow(d.tools[:0], len(d.tuples))
		d.exch = grow(d.exch[:0], len(d.tuples))
		var users, prompts, assistants, noUsage int64
		count := len(sum.Items)
		if !all {
			count = len(only)
		}
		for j := 0; j < count; j++ {
			i := j
			if !all {
				i = int(only[j])
			}
			it := &sum.Items[i]
			n, at := pg.lookup(it.Key)
			if at >= 0 {
				d.seen[at] = true
			} else if all && !it.Copied {
				d.fresh = append(d.fresh, int32(i))
			}
			var t pinTuple
			if n > 0 {
				t = pg.tuple(n)
				if t.none {
					continue
				}
			} else if it.Copied {
				pg.pin(tt, it.Key, pinTuple{none: true})
				continue
			}
			switch {
			case it.IsMessage() && it.Role == thread.RoleUser:
				if n == 0 {
					// Pinned with no labels, so that its disappearance is
					// seen.
					pg.pin(tt, it.Key, pinTuple{})
				}
				users++
				if it.Prompt {
					prompts++
				}
				continue
			case it.IsMessage() && it.Role == thread.RoleAssistant:
				assistants++
				if it.NoUsage && it.StopReason != "" {
					noUsage++
				}
				changed := false
				if t.a == "" {
					if it.Model == "" && it.StopReason == "" {
						// Still moving and naming no model yet: its model-labeled
						// values wait until it names one or finishes, so that
						// they are not pinned to `unknown` for good.
						if n == 0 {
							pg.pin(tt, it.Key, pinTuple{})
						}
						continue
					}
					t.a, changed = fold("model", it.Model), true
				}
				if t.b == "" && it.StopReason != "" {
					t.b, changed = fold("stop_reason", it.StopReason), true
				}
				if t.c == "" && it.HasRatio {
					t.c, changed = bucketIndex(ContextBuckets, it.Ratio), true
				}
				if changed {
					n = pg.pin(tt, it.Key, t)
				}
			case it.IsLedger():
				if n == 0 {
					t = pinTuple{a: fold("model", it.Model)}
					n = pg.pin(tt, it.Key, t)
				}
			case it.IsTool():
				if n == 0 {
					t = pinTuple{a: fold("tool", it.Tool), b: it.Status}
					n = pg.pin(tt, it.Key, t)
				}
			case it.Kind() == thread.ItemExchange:
				if n == 0 {
					t = pinTuple{c: bucketIndex(ExchangeBuckets, it.Seconds)}
					n = pg.pin(tt, it.Key, t)
				}
			default:
				continue
			}
			d.spend = grow(d.spend, int(n))
			d.tools = grow(d.tools, int(n))
			d.exch = grow(d.exch, int(n))
			var one spendAcc
			a := &one // a thread of 65,535 label sets: this item is counted alone
			if n > 0 {
				a = &d.spend[n-1]
			}
			switch {
			case it.IsMessage() || it.IsLedger():
				spend(a, it)
				if t.b != "" && it.IsMessage() {
					a.finished++
				}
				if t.c != "" && it.IsMessage() {
					a.ctx++
					if it.HasRatio {
						a.ctxSum = satAdd(a.ctxSum, fixedAt(ctxScale, it.Ratio))
					}
				}
				if n == 0 {
					emit(t, a)
				}
			case it.IsTool():
				if n == 0 {
					add(FamToolCalls, t.a, t.b, 1)
				} else {
					d.tools[n-1]++
				}
			default:
				sec := fixedAt(exchScale, it.Seconds)
				if n == 0 {
					add(FamExchangeBucket, "", t.c, 1)
					add(FamExchangeSum, "", "", sec)
				} else {
					d.exch[n-1].n++
					d.exch[n-1].sum = satAdd(d.exch[n-1].sum, sec)
				}
			}
		}
		add(FamMessages, "user", "", users)
		add(FamMessages, "assistant", "", assistants)
		add(FamPrompts, "", "", prompts)
		add(FamNoUsage, "", "", noUsage)
		for i := range d.spend {
			if d.spend[i].any {
				emit(d.tuples[i], &d.spend[i])
			}
		}
		for i, n := range d.tools {
			if n > 0 {
				add(FamToolCalls, d.tuples[i].a, d.tuples[i].b, n)
			}
		}
		for i, e := range d.exch {
			if e.n > 0 {
				add(FamExchangeBucket, "", d.tuples[i].c, e.n)
				add(FamExchangeSum, "", "", e.sum)
			}
		}
	}
	pass(true, nil)
	for i, seen := range d.seen {
		if !partial && !seen && !d.tuples[d.ns[i]-1].none {
			vanished = true
			break
		}
	}
	if vanished {
		reidentified = s.reidentified(sum, d)
	}
	if vanished {
		// The items that left count nothing from now on: what they counted
		// goes to the thread's retired part (Apply, retire).
		for i, seen := range d.seen {
			if !seen && !d.tuples[d.ns[i]-1].none {
				pg.pin(tt, d.keys[i], pinTuple{none: true})
			}
		}
		// Rare (a truncation): a second pass over the new items alone,
		// pinned by now, gives their share.
		all, allRates := c, rates
		c, rates = make(contribution, len(d.fresh)), map[SeriesKey]rate{}
		pass(false, d.fresh)
		fresh, c, rates = c, all, allRates
	}
	return c, rates, pg.result(), fresh, vanished, reidentified
}

// reidentified reports whether no message pinned before is in the snapshot
// (there was at least one, and none was keyed by a string id), and every
// message of the snapshot is new and keyed by a protocol id. d holds the
// pass over the snapshot.
//
// An import gives protocol ids to messages that had none: a thread whose
// messages were already keyed by string ids (protocol ids, "M-…") and
// all change at once had its first prompt edited, and the edit's prompt
// and answer are new spend however much they cost.
func (s *ThreadStore) reidentified(sum *thread.Summary, d *decodedPins) bool {
	had := false
	for i, k := range d.keys {
		if kind := thread.KeyKind(k); thread.IsMessageKind(kind) && !d.tuples[d.ns[i]-1].none {
			if d.seen[i] || kind == thread.ItemMessageStringID {
				return false
			}
			had = true
		}
	}
	if !had {
		return false
	}
	fresh := 0
	for _, i := range d.fresh {
		it := &sum.Items[i]
		if it.IsMessage() {
			if it.Alias == 0 {
				return false
			}
			fresh++
		}
	}
	for i := range sum.Items {
		if it := &sum.Items[i]; it.IsMessage() && !it.Copied {
			fresh--
		}
	}
	return fresh == 0
}

// adopt lets an item take over the pin of its alias (thread.Item.Alias:
// the key it had before its message got a protocol id, "M-…"). A thread
// imported into the server's thread store gives every message that had
// none a fresh protocol id, with the same content and usage at the same
// places; pins saved by an exporter that did not read protocol ids key
// the same messages by their numeric messageId. Either way the message
// was counted under its alias and must not count again under its new key.
//
// An item adopts its alias's pin when the item itself is not pinned yet,
// the alias is pinned to labels it could carry (a user message's empty
// labels; for an assistant message the model it names now, for a tool
// result its tool), and the alias is not an item of the snapshot in its
// own right (a message that kept that identity). An edited message keeps
// no alias pinned: its predecessor was keyed by its own protocol id, so
// the edit's new messages are new items. The alias is then pinned to count
// nothing, so that it neither counts again nor reads as gone.
func (s *ThreadStore) adopt(sum *thread.Summary, pg *pinning, fold func(label, raw string) string) {
	var present map[uint64]struct{}
	for i := range sum.Items {
		it := &sum.Items[i]
		if it.Alias == 0 || it.Copied {
			continue
		}
		if n, _ := pg.lookup(it.Key); n != 0 {
			continue
		}
		an, at := pg.lookup(it.Alias)
		if an == 0 || at < 0 {
			continue
		}
		t := pg.tuple(an)
		if t.none {
			continue
		}
		switch {
		case it.IsMessage() && it.Role == thread.RoleUser:
			if t != (pinTuple{}) {
				continue
			}
		case it.IsMessage() && it.Role == thread.RoleAssistant:
			if t.a != "" && it.Model != "" && t.a != fold("model", it.Model) {
				continue
			}
		case it.IsTool():
			if t.a != fold("tool", it.Tool) {
				continue
			}
		}
		if present == nil {
			present = make(map[uint64]struct{}, len(sum.Items))
			for j := range sum.Items {
				present[sum.Items[j].Key] = struct{}{}
			}
		}
		if _, ok := present[it.Alias]; ok {
			continue
		}
		if pg.pin(&s.tuples, it.Key, t) == 0 {
			continue
		}
		pg.pin(&s.tuples, it.Alias, pinTuple{none: true})
		if pg.adopted == nil {
			pg.adopted = map[uint64]int{}
		}
		pg.adopted[it.Key] = at
	}
}

// grow extends s with zero values to length n.
func grow[T any](s []T, n int) []T {
	var zero T
	for len(s) < n {
		s = append(s, zero)
	}
	return s
}

// PinBytes returns the memory held by the pinned labels of every thread
// (the per-thread tables; the store-wide tuple table is small and shared).
func (s *ThreadStore) PinBytes() (total, threads int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, rec := range s.threads {
		total += cap(rec.pins) + 24 + 8 // the blob, its slice header, pinGen
	}
	return total, len(s.threads)
}

// identityStateOf returns the persisted pins and retired part of a thread
// record. It reads only what a record never changes in place (its pins
// blob and retired slice are replaced when they change) and the store's
// series keys and tuple table, so it may run on a copy of the record
// outside the store's lock.
func identityStateOf(keys []SeriesKey, tt *tupleTable, rec *threadRecord) (*PinState, []SeriesValue) {
	var retired []SeriesValue
	for _, e := range rec.retired {
		k := keys[e.id]
		retired = append(retired, SeriesValue{Family: string(k.Fam), L1: k.L1, L2: k.L2, Value: e.v})
	}
	slices.SortFunc(retired, func(a, b SeriesValue) int {
		return cmp.Or(cmp.Compare(a.Family, b.Family), cmp.Compare(a.L1, b.L1), cmp.Compare(a.L2, b.L2))
	})
	return rec.pins.export(tt), retired
}

// exportIdentity adds every thread's pins and retired part to an exported
// state. Callers hold the read lock.
func (s *ThreadStore) exportIdentity(st *State) {
	for key, rec := range s.threads {
		ts := st.Threads[key]
		ts.Pins, ts.Retired = identityStateOf(s.series.keys, &s.tuples, rec)
		st.Threads[key] = ts
	}
}

// importIdentity restores the pins and retired parts of a checked state
// into the threads Import just made. Callers hold the write lock.
func (s *ThreadStore) importIdentity(st *State) {
	for key, ts := range st.Threads {
		s.restoreIdentity(s.threads[key], ts)
	}
}

// restoreIdentity restores one thread's pins and retired part (checked
// with checkPins and checkSeries) into its record. Callers hold the write
// lock. A state without them leaves the record unpinned: its items are
// pinned from the next snapshot applied.
func (s *ThreadStore) restoreIdentity(rec *threadRecord, ts ThreadState) {
	rec.pins = importPins(&s.tuples, ts.Pins)
	rec.pinGen++
	rec.retired = nil
	if len(ts.Retired) > 0 {
		retired := contribution{}
		for _, sv := range ts.Retired {
			k := sv.key()
			retired[k] = satAdd(retired[k], sv.Value)
		}
		rec.retired = s.series.compact(retired)
	}
}
