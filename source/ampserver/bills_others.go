package ampserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/amp-exporter/amp-exporter/store"
)

// BillStore is a Store that keeps the bills of threads another source
// counts (a *store.ThreadStore). A thread that is also a local file is
// counted from the file, once, but what Amp bills for it only the server
// knows: its bill is read like a counted thread's, when its listing
// changes, and counted in amp_billed_cost_usd_total.
type BillStore interface {
	BilledAt(id string) (store.FileVersion, bool)
	ApplyOthersBill(id string, usd map[string]float64, at store.FileVersion, repo string) bool
}

// othersBillDue reports whether the bill of a listed thread another
// source counts is to be read: it never was, or the listing moved since
// (its `v`, message count or last interaction, as changed tells for a
// thread the server counts).
func (s *Syncer) othersBillDue(t Summary, full bool) bool {
	bs, ok := s.store.(BillStore)
	if !s.cfg.Billed || !ok {
		return false
	}
	at, ok := bs.BilledAt(t.ID)
	if !ok || full && t.V == 0 {
		return true
	}
	return t.V != 0 && at.AmpServerV != int64(t.V) || at.AmpServerCount != int64(t.MessageCount) || at.AmpServerLast != t.LastActivity()
}

// othersBill reads and keeps the bill of a thread another source counts.
// A bill the server cannot give (a bad answer) is kept as read at this
// listing, like a counted thread's; any other failure is retried at the
// next sync.
func (s *Syncer) othersBill(ctx context.Context, t Summary) (outcome, error) {
	bs, ok := s.store.(BillStore)
	if !s.cfg.Billed || !ok {
		return outcomeSkipped, nil
	}
	at := store.FileVersion{AmpServerV: int64(t.V), AmpServerCount: int64(t.MessageCount), AmpServerLast: t.LastActivity()}
	ci, err := s.client.ThreadDisplayCostInfo(ctx, t.ID)
	switch {
	case err == nil:
		bs.ApplyOthersBill(t.ID, billSplit(ci), at, t.Repository)
		s.billed(t.ID, ci) // the entitlement it carries
	case errors.Is(err, ErrThreadNotFound):
		// Gone from the server: the source that counts it says so.
	case errors.Is(err, ErrBadResponse) || errors.Is(err, ErrBadDocument) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrInvalidArgument):
		s.noteBug(err)
		s.log.Debug("no billed cost for a thread", "err", err)
		bs.ApplyOthersBill(t.ID, nil, at, t.Repository)
	default:
		return outcomeFailed, fmt.Errorf("billed cost: %w", err)
	}
	return outcomeSkipped, nil
}

// billKept reports whether the bill of a thread another source counts is
// kept (it is then read again at a full listing as a counted thread's is,
// SyncConfig.BillRecheck).
func (s *Syncer) billKept(id string) bool {
	bs, ok := s.store.(BillStore)
	if !ok {
		return false
	}
	_, ok = bs.BilledAt(id)
	return ok
}
