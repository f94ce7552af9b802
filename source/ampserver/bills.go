package ampserver

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/amp-exporter/amp-exporter/store"
)

// rebill reads the bills of unchanged threads again (SyncConfig.BillRecheck).
// A bill that cannot be read now is read at the next full listing; only a
// refused key stops the rest.
func (s *Syncer) rebill(ctx context.Context, ids []string, st *Stats) {
	for _, id := range ids {
		ci, err := s.client.ThreadDisplayCostInfo(ctx, id)
		switch {
		case err == nil:
			s.billed(id, ci)
			st.Rebilled++
			s.dayBillsDue(id, nil) // its days read before they ended
		case errors.Is(err, ErrAuth) || ctx.Err() != nil:
			return
		default:
			s.noteBug(err)
			s.log.Debug("cannot read a thread's bill again", "err", err)
		}
	}
}

// billSplit is a thread's bill as one amount split by kind: the breakdown's
// kinds, and under "total" what totalCostUSD has beyond them (all of it
// when there is no breakdown).
func billSplit(ci CostInfo) map[string]float64 {
	usd := map[string]float64{}
	var split float64
	if b := ci.CostBreakdown; b != nil {
		for kind, v := range map[string]*float64{"free": b.FreeUSD, "paid": b.PaidUSD, "subscription": b.SubscriptionUSD} {
			if v != nil && *v > 0 && !math.IsInf(*v, 0) {
				usd[kind] = *v
				split += *v
			}
		}
	}
	if t := ci.TotalCostUSD; t != nil && *t-split > 1e-9 && !math.IsInf(*t, 0) {
		usd["total"] = *t - split
	}
	return usd
}

// billed records what Amp bills for the thread and the user's entitlement.
func (s *Syncer) billed(id string, ci CostInfo) {
	s.store.ApplyBilled(id, billSplit(ci))
	if ci.Entitlement != nil {
		s.entMu.Lock()
		s.entAsked = s.clock.Now()
		s.entResets = time.Time{}
		if r := ci.Entitlement.WindowResetsInSeconds; r != nil && *r >= 0 && *r < 1e9 {
			s.entResets = s.entAsked.Add(time.Duration(*r * float64(time.Second)))
		}
		s.entMu.Unlock()
	}
	if e := ci.Entitlement; e != nil && s.source != nil {
		ent := store.Entitlement{Window: e.WindowPeriod, LimitUSD: e.LimitUSD, RemainingUSD: e.RemainingUSD}
		if e.PercentUsed != nil {
			r := *e.PercentUsed / 100
			ent.UsedRatio = &r
		}
		if e.WindowResetsInSeconds != nil && *e.WindowResetsInSeconds >= 0 && *e.WindowResetsInSeconds < 1e9 {
			ent.ResetsAt = s.clock.Now().Add(time.Duration(*e.WindowResetsInSeconds * float64(time.Second)))
		}
		s.source.SetEntitlement(ent)
	}
}
