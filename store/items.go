package store

import (
	"cmp"
	"slices"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/ledger"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// Counting a summary: contribute turns its items into series. Each item's
// values go to the labels it is pinned to (pins.go), and an item seen for
// the first time is pinned to the labels it carries now, folded by the
// label cap. Token series are priced at the price of the model each item
// names.
//
// The work is an itemCounter, one per summary, whose steps share what they
// need (the pins, the series so far, the prices and label values looked up
// once): adopt, then a pass over the items (for each, pinItem chooses its
// labels and addItem adds it to its labels' sums; flush then turns the sums
// into series), then, when items pinned before are missing, retireMissing
// and a second pass over the new items alone (freshShare). Each step can be
// run and tested alone (items_test.go).

// counted is what counting a summary gives.
type counted struct {
	// series is the summary's share of every series its items give.
	series contribution
	// rates are the prices of each token series' items, for the dollars
	// of its growth (chargeGrowth).
	rates map[SeriesKey]rate
	// pins are the thread's pins with the new ones; the base the count
	// started from is never changed.
	pins pinBlob
	// vanished: items pinned before are missing from the snapshot (the
	// thread was truncated: an edited prompt drops what followed it). fresh
	// is then the part of series that comes from items new in this
	// snapshot, so that apply can keep what the missing items counted and
	// add the new ones in full (retire).
	vanished bool
	fresh    contribution
	// freshLedger is the part of ledger from items new in the snapshot.
	freshLedger map[SeriesKey][]bucketValue
	// reidentified: every message the thread had is gone and every message
	// is new and keyed by a protocol id; the whole thread changed identity
	// at once (see apply).
	reidentified bool
	// ledger is what the snapshot's items give per series and bucket of
	// their time (ledger.go), ledgerCost what their tokens cost there.
	ledger, ledgerCost map[SeriesKey][]bucketValue
}

// contribute counts sum's items on top of the pins base, under the
// thread's repository repo (its pinned value, repository.go). A partial
// summary (a window of the thread, window.go) lacks items by design: none
// of its thread's items is taken for missing. withLedger: also add up
// what the items give per bucket of their time (counted.ledger), which
// only an Apply needs.
func (s *ThreadStore) contribute(sum *thread.Summary, prices Prices, base pinBlob, partial, withLedger bool, repo string) counted {
	k := newItemCounter(s, sum, prices, base)
	k.repo = repo
	k.withLedger = withLedger
	return k.count(partial)
}

// itemCounter counts the items of one summary. Its fields are the context
// its steps share; a counter is used once.
type itemCounter struct {
	s      *ThreadStore
	sum    *thread.Summary
	prices Prices
	pg     *pinning
	d      *decodedPins // pg.dec
	// repo is the thread's repository, pinned per thread (repository.go):
	// the series of the families that carry the label go under it.
	repo string

	// series and rates are what the pass under way gives.
	series contribution
	rates  map[SeriesKey]rate
	// msgs are the pass's per-thread message counts.
	msgs messageCounts

	// led adds up spending per bucket and model in the pass over every
	// item (ledgerOn), for the ledger.
	led map[ledgerAt]*spendAcc
	// ledShipped is the commits and pull requests per bucket (shippedAt).
	ledShipped           map[int32]*[2]int64
	withLedger, ledgerOn bool
	// bounds and floor place item times the thread cannot hold
	// (ledgerTime), worked out once (boundsSet).
	bounds    ledger.Bounds
	floor     int64
	boundsSet bool

	units               []unitPrice // by model, looked up once
	folds               []folding   // label values folded, remembered
	ctxScale, exchScale float64
}

// messageCounts are the series a pass adds up per thread, not per tuple.
type messageCounts struct{ users, prompts, assistants, noUsage int64 }

// unitPrice is a model's unit prices at a speed (unitPricesAt); a thread
// names a few.
type unitPrice struct {
	model string
	speed pricing.Speed
	speedPrices
}

// folding is a label value the label cap gave for a raw value.
type folding struct{ label, raw, value string }

func newItemCounter(s *ThreadStore, sum *thread.Summary, prices Prices, base pinBlob) itemCounter {
	pg := newPinning(&s.tuples, base)
	pg.expect = max(len(sum.Items)-len(pg.dec.keys), 8)
	pg.unkept = s.appliedOnce && len(base) == 0
	d := pg.dec
	d.seen = grow(d.seen[:0], len(d.keys))
	d.fresh = d.fresh[:0]
	return itemCounter{
		s: s, sum: sum, prices: prices, pg: pg, d: d,
		series:    make(contribution, seriesHint(sum)),
		rates:     make(map[SeriesKey]rate, 4),
		ctxScale:  scaleOf(FamContextSum),
		exchScale: scaleOf(FamExchangeSum),
	}
}

// seriesHint sizes a summary's series table from its items alone (the
// summary's per-model totals are not there when it was made by
// thread.SummarizeItems): a thread's series are the per-thread ones and a
// few per model and tool used, far fewer than its items.
func seriesHint(sum *thread.Summary) int { return 24 + min(len(sum.Items), 24) }

// count runs the steps in order and gives the tables back to the pool.
func (k *itemCounter) count(partial bool) counted {
	k.adopt()
	k.ledgerOn = k.withLedger
	k.pass(true, nil)
	k.ledgerOn = false
	res := counted{series: k.series, rates: k.rates}
	res.ledger, res.ledgerCost = k.ledgerValues()
	if !partial && k.missing() {
		res.vanished = true
		res.reidentified = k.s.reidentified(k.sum, k.d)
		k.retireMissing()
		res.fresh, res.freshLedger = k.freshShare()
	}
	res.pins = k.pg.result()
	return res
}

// key is the series of family f under labels l1, l2, and the thread's
// repository for the families that carry it. Every series the counter
// adds goes through it.
func (k *itemCounter) key(f Family, l1, l2 string) SeriesKey {
	sk := SeriesKey{Fam: f, L1: l1, L2: l2}
	if repoFamily[f] {
		sk.Repo = k.repo
	}
	return sk
}

// add adds v (when positive) to a series.
func (k *itemCounter) add(f Family, l1, l2 string, v int64) {
	if v > 0 {
		sk := k.key(f, l1, l2)
		k.series[sk] = sat.Add(k.series[sk], v)
	}
}

// fold is the label cap's value for a raw label value, remembered for the
// summary (it names a few).
func (k *itemCounter) fold(label, raw string) string {
	for _, f := range k.folds {
		if f.raw == raw && f.label == label {
			return f.value
		}
	}
	v := k.s.labels.value(label, raw)
	if len(k.folds) < 64 {
		k.folds = append(k.folds, folding{label, raw, v})
	}
	return v
}

// priceOf returns the unit prices of a model at the speed an item asked
// for, looked up once per summary.
func (k *itemCounter) priceOf(model string, speed pricing.Speed) *unitPrice {
	for i := range k.units {
		if k.units[i].model == model && k.units[i].speed == speed {
			return &k.units[i]
		}
	}
	u := unitPrice{model: model, speed: speed}
	if k.prices != nil {
		u.speedPrices = unitPricesAt(k.prices, model, speed)
	}
	k.units = append(k.units, u)
	return &k.units[len(k.units)-1]
}

// pass adds up the items of the summary into series and rates: all of
// them, or those listed in only. Items are added up per pinned tuple
// first, so that the series map sees one entry per tuple rather than per
// item.
func (k *itemCounter) pass(all bool, only []int32) {
	d := k.d
	d.spend = grow(d.spend[:0], len(d.tuples))
	d.tools = grow(d.tools[:0], len(d.tuples))
	d.exch = grow(d.exch[:0], len(d.tuples))
	k.msgs = messageCounts{}
	if all {
		for i := range k.sum.Items {
			k.item(i, true)
		}
	} else {
		for _, i := range only {
			k.item(int(i), false)
		}
	}
	k.flush()
}

// item counts the i-th item of the summary. all: the pass is over every
// item, so an item not pinned before is noted as new and one pinned
// before as seen.
func (k *itemCounter) item(i int, all bool) {
	it := &k.sum.Items[i]
	n, at := k.pg.lookup(it.Key)
	if at >= 0 {
		k.d.seen[at] = true
	} else if all && !it.Copied {
		k.d.fresh = append(k.d.fresh, int32(i))
	}
	var t pinTuple
	if n > 0 {
		t = k.pg.tuple(n)
		if t.none {
			return
		}
	} else if it.Copied {
		k.pg.pin(&k.s.tuples, it.Key, pinTuple{none: true})
		return
	}
	if k.s.ledgerOnly && !spendsMoney(it) && !shipped(it) {
		if it.IsTool() && it.Lines && it.Status == thread.StatusDone {
			k.fold("model", it.Model) // as pinItem would: the cap folds the same values
		}
		return
	}
	if !k.s.ledgerOnly {
		k.countMessage(it)
	}
	n, t, ok := k.pinItem(it, n, t)
	if ok {
		k.addItem(it, n, t)
	}
}

// spendsMoney reports whether an item can give a series the ledger keeps:
// an assistant message or a ledger event (tokens, credits).
func spendsMoney(it *thread.Item) bool {
	return it.IsLedger() || it.IsMessage() && it.Role == thread.RoleAssistant
}

// shipped reports whether an item is a shell call that made a commit or
// opened a pull request: the ledger keeps those too.
func shipped(it *thread.Item) bool {
	return it.IsTool() && (it.Commits > 0 || it.PullRequests > 0)
}

// countMessage adds a message to the thread's message counts.
func (k *itemCounter) countMessage(it *thread.Item) {
	switch {
	case !it.IsMessage():
	case it.Role == thread.RoleUser:
		k.msgs.users++
		if it.Prompt {
			k.msgs.prompts++
		}
	case it.Role == thread.RoleAssistant:
		k.msgs.assistants++
		if it.NoUsage && it.StopReason != "" {
			k.msgs.noUsage++
		}
	}
}

// pinItem chooses the labels an item counts under: t, those it is pinned
// to (n, its local tuple number + 1, 0 when not pinned), completed or
// first chosen from what the item carries now and pinned. ok is false for
// an item that adds nothing to a tuple's sums (a user message, counted by
// countMessage alone; an assistant message naming no model yet).
func (k *itemCounter) pinItem(it *thread.Item, n uint16, t pinTuple) (uint16, pinTuple, bool) {
	pg, tt := k.pg, &k.s.tuples
	switch {
	case it.IsMessage() && it.Role == thread.RoleUser:
		if n == 0 {
			// Pinned with no labels, so that its disappearance is seen.
			pg.pin(tt, it.Key, pinTuple{})
		}
		return n, t, false
	case it.IsMessage() && it.Role == thread.RoleAssistant:
		changed := false
		if t.name == "" {
			if it.Model == "" && it.StopReason == "" {
				// Still moving and naming no model yet: its model-labeled
				// values wait until it names one or finishes, so that they
				// are not pinned to `unknown` for good.
				if n == 0 {
					pg.pin(tt, it.Key, pinTuple{})
				}
				return n, t, false
			}
			t.name, changed = k.fold("model", it.Model), true
		}
		if t.outcome == "" && it.StopReason != "" {
			t.outcome, changed = k.fold("stop_reason", it.StopReason), true
		}
		if t.bucket == "" && it.HasRatio {
			t.bucket, changed = bucketIndex(ContextBuckets, it.Ratio), true
		}
		if changed {
			n = pg.pin(tt, it.Key, t)
		}
	case it.IsLedger():
		if n == 0 {
			t = pinTuple{name: k.fold("model", it.Model)}
			n = pg.pin(tt, it.Key, t)
		}
	case it.IsTool():
		if n == 0 {
			t = pinTuple{name: k.fold("tool", it.Tool), outcome: it.Status}
			if byModel(it) && it.Status == thread.StatusDone {
				t.bucket = k.fold("model", it.Model)
			}
			n = pg.pin(tt, it.Key, t)
		} else if t.bucket == "" && byModel(it) && t.outcome == thread.StatusDone {
			// An edit or a commit pinned without its model (by a version
			// that did not count them by model) gets it once, here.
			t.bucket = k.fold("model", it.Model)
			n = pg.pin(tt, it.Key, t)
		}
	case it.Kind() == thread.ItemExchange:
		if n == 0 {
			t = pinTuple{bucket: bucketIndex(ExchangeBuckets, it.Seconds)}
			n = pg.pin(tt, it.Key, t)
		}
	default:
		return n, t, false
	}
	return n, t, true
}

// byModel says a tool call's tuple carries the model of the message that
// made it (pinTuple.bucket): an edit's lines and a shell call's commits and
// pull requests are counted by model too.
func byModel(it *thread.Item) bool {
	return it.Lines || it.Commits > 0 || it.PullRequests > 0
}

// addItem adds an item to the sums of its tuple t (local number n + 1),
// or, for an item that could not be pinned (n == 0: a thread of 65,535
// label sets), straight to the series.
func (k *itemCounter) addItem(it *thread.Item, n uint16, t pinTuple) {
	d := k.d
	d.spend = grow(d.spend, int(n))
	d.tools = grow(d.tools, int(n))
	d.exch = grow(d.exch, int(n))
	switch {
	case it.IsMessage() || it.IsLedger():
		var one spendAcc
		a := &one
		if n > 0 {
			a = &d.spend[n-1]
		}
		k.spend(a, it)
		if k.ledgerOn {
			k.spendAt(t.name, it)
		}
		if t.outcome != "" && it.IsMessage() {
			a.finished++
		}
		if t.bucket != "" && it.IsMessage() {
			a.ctx++
			if it.HasRatio {
				a.ctxSum = sat.Add(a.ctxSum, fixedAt(k.ctxScale, it.Ratio))
			}
		}
		if n == 0 {
			k.emit(t, a)
		}
	case it.IsTool() && k.s.ledgerOnly:
		// Only what the ledger keeps (LedgerOnly): under the pinned
		// status, as below.
		if t.outcome == thread.StatusDone {
			k.add(FamCommits, "", "", int64(it.Commits))
			k.add(FamPullRequests, "", "", int64(it.PullRequests))
			if k.ledgerOn {
				k.shippedAt(it)
			}
		}
	case it.IsTool():
		if n == 0 {
			k.add(FamToolCalls, t.name, t.outcome, 1)
		} else {
			d.tools[n-1]++
		}
		// Under the pinned status: a call counted as done stays done.
		if it.Lines && t.outcome == thread.StatusDone {
			k.add(FamLines, "added", t.name, it.Added)
			k.add(FamLines, "removed", t.name, it.Removed)
			k.add(FamLinesByModel, "added", t.bucket, it.Added)
			k.add(FamLinesByModel, "removed", t.bucket, it.Removed)
		} else if it.Uncounted != "" && t.outcome == thread.StatusDone {
			k.add(FamLinesUncounted, it.Uncounted, "", 1)
		}
		if it.Shell != "" {
			k.add(FamShellCommands, it.Shell, "", 1)
		}
		// Under the pinned status too: a call counted as done stays done,
		// and one first counted unfinished never counts what it did.
		if t.outcome == thread.StatusDone {
			k.add(FamCommits, "", "", int64(it.Commits))
			k.add(FamPullRequests, "", "", int64(it.PullRequests))
			k.add(FamCommitsByModel, t.bucket, "", int64(it.Commits))
			k.add(FamPullRequestsByModel, t.bucket, "", int64(it.PullRequests))
			k.add(FamPushes, thread.PushSuccess, "", int64(it.Pushes))
			k.add(FamPushes, thread.PushFailure, "", int64(it.FailedPushes))
			if k.ledgerOn {
				k.shippedAt(it)
			}
		}
	default:
		sec := fixedAt(k.exchScale, it.Seconds)
		if n == 0 {
			k.add(FamExchangeBucket, "", t.bucket, 1)
			k.add(FamExchangeSum, "", "", sec)
		} else {
			d.exch[n-1].n++
			d.exch[n-1].sum = sat.Add(d.exch[n-1].sum, sec)
		}
	}
}

// spend adds what a message or ledger event spent to a: its credits, its
// tokens, and their dollars at the unit prices of the model it names
// (tokens of a model without prices are added up as unpriced).
func (k *itemCounter) spend(a *spendAcc, it *thread.Item) {
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
	u := k.priceOf(raw, askedSpeed(it.Speed))
	ns := [4]int64{it.Tokens.Input, it.Tokens.Output, it.Tokens.CacheRead, it.Tokens.CacheCreation}
	over := [4]int64{it.Over.Input, it.Over.Output, it.Over.CacheRead, it.Over.CacheCreation}
	var sa *speedAcc // the speed's part, nil at standard speed
	if u.as != pricing.Standard {
		sa = &a.speed[u.as-1]
	}
	for i, n := range ns {
		if n <= 0 {
			continue
		}
		nl := min(max(over[i], 0), n)
		a.tokens[i] = sat.Add(a.tokens[i], n)
		a.long[i] = sat.Add(a.long[i], nl)
		stdCost, longCost, unpriced := &a.stdCost, &a.longCost, &a.unpriced
		if sa != nil {
			sa.tokens[i] = sat.Add(sa.tokens[i], n)
			sa.long[i] = sat.Add(sa.long[i], nl)
			stdCost, longCost, unpriced = &sa.stdCost, &sa.longCost, &sa.unpriced
			sa.premStd[i] = sat.Add(sa.premStd[i], sat.Mul(n-nl, u.premStd[i]))
			sa.premLong[i] = sat.Add(sa.premLong[i], sat.Mul(nl, u.premLong[i]))
		}
		if u.ok {
			stdCost[i] = sat.Add(stdCost[i], sat.Mul(n-nl, u.std[i]))
			longCost[i] = sat.Add(longCost[i], sat.Mul(nl, u.long[i]))
		} else {
			unpriced[i] = sat.Add(unpriced[i], n)
		}
	}
}

// emit turns the sums of one tuple's spending into series, and its token
// series' rates.
func (k *itemCounter) emit(t pinTuple, a *spendAcc) {
	for i, n := range a.tokens {
		if n <= 0 {
			continue
		}
		k.add(FamTokens, t.name, TokenTypes[i], n)
		k.add(FamTokensLong, t.name, TokenTypes[i], a.long[i])
		// The token series' rate prices its standard tokens; each faster
		// speed's part is a series of its own, with its own rate.
		std, long := n, a.long[i]
		for s := range a.speed {
			sa := &a.speed[s]
			if sa.tokens[i] <= 0 {
				continue
			}
			std, long = std-sa.tokens[i], long-sa.long[i]
			f := speedFamilies[s]
			k.add(f.tokens, t.name, TokenTypes[i], sa.tokens[i])
			k.add(f.long, t.name, TokenTypes[i], sa.long[i])
			k.addRate(k.key(f.tokens, t.name, TokenTypes[i]), sa.tokens[i]-sa.long[i], sa.long[i], sa.stdCost[i], sa.longCost[i], sa.unpriced[i],
				[2]int64{sa.premStd[i], sa.premLong[i]})
		}
		k.addRate(k.key(FamTokens, t.name, TokenTypes[i]), std-long, long, a.stdCost[i], a.longCost[i], a.unpriced[i], [2]int64{})
	}
	if a.hasCredits {
		k.add(FamCredits, t.name, "", fixed(FamCredits, a.credits))
	}
	if k.s.ledgerOnly {
		return
	}
	k.add(FamFinished, t.name, t.outcome, a.finished)
	k.add(FamContextBucket, t.name, t.bucket, a.ctx)
	k.add(FamContextSum, t.name, "", a.ctxSum)
}

// addRate adds tokens and their costs to the rate of token series sk.
func (k *itemCounter) addRate(sk SeriesKey, stdTokens, longTokens, stdCost, longCost, unpriced int64, premium [2]int64) {
	r := k.rates[sk]
	r.std.tokens = sat.Add(r.std.tokens, stdTokens)
	r.long.tokens = sat.Add(r.long.tokens, longTokens)
	r.std.cost = sat.Add(r.std.cost, stdCost)
	r.long.cost = sat.Add(r.long.cost, longCost)
	r.unpriced = sat.Add(r.unpriced, unpriced)
	r.premium[0] = sat.Add(r.premium[0], premium[0])
	r.premium[1] = sat.Add(r.premium[1], premium[1])
	k.rates[sk] = r
}

// flush turns the pass's sums (per thread and per tuple) into series.
func (k *itemCounter) flush() {
	d := k.d
	k.add(FamMessages, "user", "", k.msgs.users)
	k.add(FamMessages, "assistant", "", k.msgs.assistants)
	k.add(FamPrompts, "", "", k.msgs.prompts)
	k.add(FamNoUsage, "", "", k.msgs.noUsage)
	for i := range d.spend {
		if d.spend[i].any {
			k.emit(d.tuples[i], &d.spend[i])
		}
	}
	for i, n := range d.tools {
		if n > 0 {
			k.add(FamToolCalls, d.tuples[i].name, d.tuples[i].outcome, n)
		}
	}
	for i, e := range d.exch {
		if e.n > 0 {
			k.add(FamExchangeBucket, "", d.tuples[i].bucket, e.n)
			k.add(FamExchangeSum, "", "", e.sum)
		}
	}
}

// missing reports whether an item pinned before (to labels that count)
// is not in the snapshot. Run after the pass over every item.
func (k *itemCounter) missing() bool {
	d := k.d
	for i, seen := range d.seen {
		if !seen && !d.tuples[d.ns[i]-1].none {
			return true
		}
	}
	return false
}

// retireMissing pins the items that left the snapshot to count nothing
// from now on: what they counted goes to the thread's retired part
// (apply, retire).
func (k *itemCounter) retireMissing() {
	d := k.d
	for i, seen := range d.seen {
		if !seen && !d.tuples[d.ns[i]-1].none {
			k.pg.pin(&k.s.tuples, d.keys[i], pinTuple{none: true})
		}
	}
}

// freshShare is the part of the snapshot's series that the items new in
// it give: a second pass over them alone, pinned by now. Rare (a
// truncation). The counter's series and rates stay those of the whole
// snapshot.
func (k *itemCounter) freshShare() (contribution, map[SeriesKey][]bucketValue) {
	all, allRates, allLed, allShipped := k.series, k.rates, k.led, k.ledShipped
	k.series, k.rates, k.led, k.ledShipped = make(contribution, len(k.d.fresh)), map[SeriesKey]rate{}, nil, nil
	k.ledgerOn = k.withLedger
	k.pass(false, k.d.fresh)
	k.ledgerOn = false
	fresh, freshLed := k.series, k.ledger()
	k.series, k.rates, k.led, k.ledShipped = all, allRates, allLed, allShipped
	return fresh, freshLed
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
//
// The alias is the message's numeric messageId (else its position). A
// thread known by the 0-based ids of a local-era document and served after
// its import with the CLI's numbering (index + 1) is known one lower
// (thread.Item.AliasFromZero): the numbering under which more of the
// snapshot's items adopt is the thread's, so that no message takes over
// its neighbour's pin.
func (k *itemCounter) adopt() {
	if len(k.d.keys) == 0 {
		return // no pins yet: no alias to take over
	}
	alias := func(it *thread.Item) uint64 { return it.Alias }
	if fromZero := func(it *thread.Item) uint64 { return it.AliasFromZero }; k.adoptWith(fromZero, false) > k.adoptWith(alias, false) {
		alias = fromZero
	}
	k.adoptWith(alias, true)
}

// adoptWith is adopt with the items' aliases given by alias; unless apply
// is set it pins nothing and only says how many items would adopt.
func (k *itemCounter) adoptWith(aliasOf func(*thread.Item) uint64, apply bool) int {
	s, sum, pg := k.s, k.sum, k.pg
	var present map[uint64]struct{}
	adopted := 0
	for i := range sum.Items {
		it := &sum.Items[i]
		alias := aliasOf(it)
		if alias == 0 || it.Copied {
			continue
		}
		if n, _ := pg.lookup(it.Key); n != 0 {
			continue
		}
		an, at := pg.lookup(alias)
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
			if t.name != "" && it.Model != "" && t.name != k.fold("model", it.Model) {
				continue
			}
		case it.IsTool():
			if t.name != k.fold("tool", it.Tool) {
				continue
			}
		}
		if present == nil {
			present = make(map[uint64]struct{}, len(sum.Items))
			for j := range sum.Items {
				present[sum.Items[j].Key] = struct{}{}
			}
		}
		if _, ok := present[alias]; ok {
			continue
		}
		if !apply {
			adopted++
			continue
		}
		if pg.pin(&s.tuples, it.Key, t) == 0 {
			continue
		}
		pg.pin(&s.tuples, alias, pinTuple{none: true})
		if pg.adopted == nil {
			pg.adopted = map[uint64]int{}
		}
		pg.adopted[it.Key] = at
		adopted++
	}
	return adopted
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
	for _, e := range rec.more().retired {
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
	rec.change(func(x *threadExtra) { x.retired = nil })
	if len(ts.Retired) > 0 {
		retired := contribution{}
		for _, sv := range ts.Retired {
			k := sv.keyIn(rec.repo)
			if k.Fam == FamCost || k.Fam == FamUnpriced {
				// Never retired (they follow token growth): a saved one
				// would raise the counter with nothing to show for it.
				continue
			}
			retired[k] = sat.Add(retired[k], sv.Value)
		}
		rec.change(func(x *threadExtra) { x.retired = s.series.compact(retired) })
	}
}
