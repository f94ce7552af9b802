package ampserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

func (s *Syncer) fetchAll(ctx context.Context, threads []Summary, st *Stats) error {
	if len(threads) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan Summary)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range min(s.cfg.MaxConcurrency, len(threads)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &parsers{whole: thread.NewParser(), part: thread.NewParser()}
			for t := range jobs {
				outcome, err := s.fetchOne(ctx, p, t, s.readWhole(t, st))
				mu.Lock()
				if outcome != outcomeUnreadable {
					delete(s.unreadable, t.ID)
				}
				switch {
				case outcome == outcomeCounted:
					st.Fetched++
				case outcome == outcomeGone:
					st.Gone++
				case outcome == outcomeSkipped:
					st.Skipped++
				case outcome == outcomeOtherUser:
					st.Skipped++
					s.skipOther(t.ID)
				case outcome == outcomeUnreadable:
					st.Unreadable++
					s.unreadable[t.ID] = listedAs(t)
				default:
					st.Failed++
					if firstErr == nil {
						firstErr = err
					}
					if errors.Is(err, ErrAuth) || errors.Is(err, ErrRateLimited) {
						// The rest waits for the next sync.
						cancel()
					}
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, t := range threads {
		select {
		case jobs <- t:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	return firstErr
}

type outcome int

const (
	outcomeFailed outcome = iota
	outcomeCounted
	outcomeGone
	outcomeSkipped
	outcomeUnreadable
	outcomeOtherUser
)

// fetchOne reads a changed thread and counts it: its window when it has
// one (window.go), else, with whole, or when the window cannot be
// counted, the whole thread.
func (s *Syncer) fetchOne(ctx context.Context, p *parsers, t Summary, whole bool) (outcome, error) {
	if s.owners != nil {
		if o := s.owners.Owner(t.ID); o != "" && o != store.SourceAmpServer {
			return s.othersBill(ctx, t)
		}
	}
	path := store.AmpServerPath(t.ID)
	if w, ok := s.window(path); ok && !whole {
		if t.MessageCount != 0 && t.MessageCount < w.Count {
			// Fewer messages than counted: truncated.
			s.windowed(true, true)
		} else if out, err, done := s.fetchWindow(ctx, p, t, w); done {
			return out, err
		}
	}
	ex, err := s.client.exportThread(ctx, t.ID, s.cfg.MaxThreadBytes, false)
	if out, err, done := s.exportFailed(path, t, err); done {
		return out, err
	}
	// Nothing counted keeps a byte of the messages: their buffers are
	// reused once the thread is counted.
	defer ex.Release()
	if s.otherUsers(ex.CreatorUserID) {
		return outcomeOtherUser, nil
	}
	began := s.clock.Now()
	parsed, err := ex.Parse(p.whole)
	if err != nil {
		s.parseFailed(thread.Reason(err), t.ID, err)
		return outcomeUnreadable, fmt.Errorf("thread from the server: %w", err)
	}
	sum := thread.SummarizeItems(parsed)
	next := s.next(p, parsed, sum, ex, 1)
	return s.count(ctx, t, ex, sum, store.Window{}, next, began)
}

// exportFailed sorts out a failed read of a thread; done is false when
// there was no failure.
func (s *Syncer) exportFailed(path string, t Summary, err error) (outcome, error, bool) {
	switch {
	case err == nil:
		return 0, nil, false
	case errors.Is(err, ErrThreadNotFound):
		s.store.Remove(path)
		return outcomeGone, nil, true
	case errors.Is(err, ErrTooLarge):
		s.parseFailed(thread.ReasonTooLarge, t.ID, err)
		return outcomeUnreadable, err, true
	case errors.Is(err, ErrBadDocument):
		// The document is there and cannot be read: a parse error, read
		// again when its `v` changes.
		s.parseFailed("bad_response", t.ID, err)
		return outcomeUnreadable, err, true
	default:
		// Refused, rate limited, invalid, transient: nothing is known of
		// the document; it is fetched again at the next sync.
		s.noteBug(err)
		return outcomeFailed, err, true
	}
}

// count counts a thread read whole (w is zero) or as its window, with its
// bill, and keeps next as its next window.
func (s *Syncer) count(ctx context.Context, t Summary, ex Export, sum *thread.Summary, w store.Window, next *store.NextWindow, began time.Time) (outcome, error) {
	path := store.AmpServerPath(t.ID)
	if sum.ID != "" && sum.ID != t.ID {
		// The store counts a thread under its document's id; one that
		// names another thread than the one listed and claimed would be
		// counted under an id nobody claimed (a local thread's, say).
		err := &Error{Method: MethodGetThreadTail, kind: ErrBadDocument, detail: "the document names another thread"}
		s.parseFailed("bad_response", t.ID, err)
		return outcomeUnreadable, err
	}
	if sum.ID == "" {
		sum.ID = t.ID
	}
	// Claimed only once it can be counted: a thread the server lists but
	// the exporter cannot read stays with whichever source can.
	if s.owners != nil && !s.owners.Claim(t.ID, store.SourceAmpServer) {
		return s.othersBill(ctx, t)
	}
	v := ex.V
	if v == 0 {
		v = int64(t.V)
	}
	if sum.AgentMode == "" {
		sum.AgentMode = t.AgentMode
	}
	// The bill is read before the thread is recorded at this version: a
	// thread recorded as current is not fetched again, so a bill that
	// failed after it would be lost until the thread changes.
	took := s.clock.Now().Sub(began) // the bill's round trip is not parsing
	var ci *CostInfo
	if s.cfg.Billed {
		c, err := s.client.ThreadDisplayCostInfo(ctx, t.ID)
		switch {
		case err == nil:
			ci = &c
		case errors.Is(err, ErrThreadNotFound):
			s.store.Remove(path)
			return outcomeGone, nil
		case errors.Is(err, ErrBadResponse) || errors.Is(err, ErrBadDocument) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrInvalidArgument):
			// Not worth a retry: the thread is counted without its bill.
			s.noteBug(err)
			s.log.Debug("no billed cost for a thread", "err", err)
		default:
			return outcomeFailed, fmt.Errorf("billed cost: %w", err)
		}
	}
	days := s.activeDays(sum) // before the store is given sum
	fv := store.FileVersion{Size: ex.Size, AmpServerV: v, AmpServerCount: int64(t.MessageCount), AmpServerLast: t.LastActivity(),
		AmpServerWindow: w.Start > 0}
	if ws, ok := s.store.(WindowStore); ok {
		if _, err := ws.ApplyWindow(path, fv, sum, w, next); err != nil {
			return outcomeFailed, err
		}
	} else {
		s.store.Apply(path, fv, sum)
	}
	if s.metrics != nil {
		s.metrics.Parsed(store.SourceAmpServer, took)
	}
	if ci != nil {
		s.billed(t.ID, *ci)
	}
	s.dayBillsDue(t.ID, days)
	return outcomeCounted, nil
}

func (s *Syncer) parseFailed(reason, id string, err error) {
	if s.metrics != nil {
		s.metrics.ParseFailed(store.SourceAmpServer, reason)
	}
	s.log.Warn("cannot read a thread from the Amp server; its last good counts are kept", "reason", reason, "err", err)
	_ = id // thread ids are not logged at warn level
}
