package app

import (
	"testing"

	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// Billed dollars are unknown (nil) without the Amp server source, and
// known (an empty list before the first bill) with it.
func TestStoresLedgerBillsKnownWithTheServer(t *testing.T) {
	files := ampstore.NewThreadStore(ampstore.StoreOptions{})
	if b := (storesLedger{stores: []*ampstore.ThreadStore{files}}).Bills(); b != nil {
		t.Errorf("without the server: %v, want nil", b)
	}
	server := ampstore.NewThreadStore(ampstore.StoreOptions{})
	l := storesLedger{stores: []*ampstore.ThreadStore{files, server}, server: server}
	if b := l.Bills(); b == nil || len(b) != 0 {
		t.Errorf("with the server, no bill yet: %v, want []", b)
	}
}
