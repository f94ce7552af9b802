package app

import (
	"cmp"
	"slices"

	"github.com/amp-exporter/amp-exporter/ledger"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// storesLedger is the exporter's ledger: the rows of the thread-file store
// and of the Amp server's (a thread is counted by one of them only), and
// the server's bills.
type storesLedger struct {
	stores []*ampstore.ThreadStore
	// server is the Amp server's store, nil when that source is off.
	server *ampstore.ThreadStore
	// workspace is the workspace source's store, nil when it is off: its
	// rows are the daily rollup's, per day, user and model.
	workspace *ampstore.WorkspaceStore
}

// ledgerReader reads the stores' ledgers.
func (a *App) ledgerReader() LedgerReader {
	l := storesLedger{stores: []*ampstore.ThreadStore{a.threads}, server: a.ampServer.threadStore()}
	if l.server != nil {
		l.stores = append(l.stores, l.server)
	}
	if a.workspace != nil {
		l.workspace = a.workspace.store
	}
	return l
}

// Ledger is both stores' rows; a report sorts them as it groups them.
func (l storesLedger) Ledger() []ledger.Entry {
	var out []ledger.Entry
	for _, st := range l.stores {
		out = append(out, st.Ledger()...)
	}
	if l.workspace != nil {
		out = append(out, l.workspace.Ledger()...)
	}
	return out
}

// LedgerBetween is both stores' rows of the buckets that start in
// [from, to).
func (l storesLedger) LedgerBetween(from, to int64) []ledger.Entry {
	var out []ledger.Entry
	for _, st := range l.stores {
		out = append(out, st.LedgerBetween(from, to)...)
	}
	if l.workspace != nil {
		out = append(out, l.workspace.LedgerBetween(from, to)...)
	}
	return out
}

// Bills are the server's bills per thread and day: nil (unknown) while
// that source is off, empty before the first is read.
func (l storesLedger) Bills() []ledger.Bill {
	if l.server == nil {
		return nil
	}
	if bills := l.server.Bills(); bills != nil {
		return bills
	}
	return []ledger.Bill{}
}

// LedgerCoarsened is both stores' coarsened stretches, sorted.
func (l storesLedger) LedgerCoarsened() []ledger.Span {
	out := []ledger.Span{}
	for _, st := range l.stores {
		out = append(out, st.LedgerCoarsened()...)
	}
	slices.SortFunc(out, func(a, b ledger.Span) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End)) })
	return out
}

// Generation moves whenever either store changes.
func (l storesLedger) Generation() uint64 {
	var g uint64
	for _, st := range l.stores {
		g += st.Generation()
	}
	if l.workspace != nil {
		g += l.workspace.Generation()
	}
	return g
}
