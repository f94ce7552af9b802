package ampserver

import (
	"context"
	"time"
)

// entitlementDue reports whether the entitlement window should be asked
// for on its own: it comes with the bill of a changed thread, and an idle
// account has none (after a restart, or when the window resets).
func (s *Syncer) entitlementDue(now time.Time) bool {
	if !s.cfg.Billed || s.source == nil {
		return false
	}
	s.entMu.Lock()
	defer s.entMu.Unlock()
	return s.entAsked.IsZero() || now.Sub(s.entAsked) >= s.cfg.FullInterval ||
		(!s.entResets.IsZero() && !now.Before(s.entResets) && s.entAsked.Before(s.entResets))
}

// entitlement asks for the bill of the account's newest thread for the
// entitlement window it carries. The bill is applied as any other (a bill
// read again counts nothing more); a failure waits for the next sync that
// is due.
func (s *Syncer) entitlement(ctx context.Context, id string, now time.Time) {
	s.entMu.Lock()
	s.entAsked = now
	s.entMu.Unlock()
	ci, err := s.client.ThreadDisplayCostInfo(ctx, id)
	if err != nil {
		s.noteBug(err)
		s.log.Debug("cannot read the entitlement window", "err", err)
		return
	}
	s.billed(id, ci)
}
