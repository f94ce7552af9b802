package workspace

import (
	"context"
	"time"
)

// Run syncs every Interval until ctx ends, calling done after each sync
// with what it did, its error and when it ended (done may be nil). A
// sync is not cut short by a reload or a stop in the middle of a
// request: ctx ends it, and what it counted stays counted.
func (s *Syncer) Run(ctx context.Context, done func(Stats, error, time.Time)) error {
	for {
		st, err := s.Sync(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if done != nil {
			done(st, err, s.clock.Now())
		}
		if err != nil {
			s.log.Warn("workspace sync incomplete; what was read is counted, the rest at the next sync", "err", err,
				"fetched", st.Fetched, "retry_in", s.cfg.Interval)
		}
		t := s.clock.NewTimer(s.cfg.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}
