package ampserver

import (
	"context"
	"errors"
	"log/slog"
)

// Run syncs every Interval until ctx ends. The first sync waits for start
// (closed when the local thread directories were first scanned, so a
// thread present as a local file is claimed by the file).
func (s *Syncer) Run(ctx context.Context, start <-chan struct{}) error {
	if start != nil {
		select {
		case <-start:
		case <-ctx.Done():
			return nil
		}
	}
	refused := false // the key was refused, and that was logged
	tooLong := false // a listing too long was logged
	for {
		wait := s.cfg.Interval
		st, err := s.Sync(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if st.Passed && s.onPass != nil {
			s.onPass()
		}
		if refused && !errors.Is(err, ErrAuth) {
			refused = false
			s.log.Info("the Amp server accepts the API key again")
		}
		switch {
		case errors.Is(err, ErrAuth):
			wait = max(s.cfg.AuthRetry, s.cfg.Interval)
			if errors.Is(err, ErrLoginGone) {
				// Nothing is sent for a login that is gone: each try
				// reads secrets.json only, and a login another process
				// stored (or `amp login`) is followed at the next sync.
				wait = s.cfg.Interval
			}
			level := slog.LevelError // one line, not one per retry
			if refused {
				level = slog.LevelDebug
			}
			refused = true
			s.log.Log(ctx, level, "the Amp server refused the API key; retrying slowly (log in again, or set amp_server.enabled: false to stop)",
				"err", err, "retry_in", wait)
			s.up(false)
		case errors.Is(err, ErrListingTooLong):
			level := slog.LevelError // once, not once per sync
			if tooLong {
				level = slog.LevelDebug
			}
			tooLong = true
			s.log.Log(ctx, level, "the Amp server's thread listing does not end; each sync stops at its bound (what was listed is counted)",
				"err", err, "fetched", st.Fetched)
			s.up(false)
		case err != nil:
			s.log.Warn("sync with the Amp server incomplete; what was fetched is counted, the rest is retried",
				"err", err, "fetched", st.Fetched, "failed", st.Failed)
			s.up(false)
		default:
			tooLong = false
			s.up(true)
			if s.source != nil {
				s.source.Synced(s.clock.Now())
			}
			s.log.Debug("synced with the Amp server", "full", st.Full, "pages", st.Pages, "listed", st.Listed,
				"fetched", st.Fetched, "gone", st.Gone, "skipped", st.Skipped, "unreadable", st.Unreadable, "day_bills", st.DayBills)
		}
		t := s.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

func (s *Syncer) up(ok bool) {
	if s.source != nil {
		s.source.Up(ok)
	}
}
