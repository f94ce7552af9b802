package ampserver

import (
	"context"
	"errors"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// Windows (docs/amp-server-sync.md): a thread the exporter counted before
// is read from a prompt some messages before the end of what it counted
// (SyncConfig.WindowOverlap), not whole. The store checks the window
// against what it counted (every item the window had is still in it, and
// nothing counted before the window is in it again) and counts it with what
// lay before it; a window it cannot vouch for is refused and the thread is
// read whole. A full sync reads changed threads whole, and every thread
// last counted from a window (store.FileVersion.AmpServerWindow): what lies
// before a window is not read with it.

// parsers are a fetch worker's parsers: one for the document counted, one
// for the part of it that is kept as the next window.
type parsers struct{ whole, part *thread.Parser }

// window returns the window of a thread, when the store keeps windows
// and windows are on.
func (s *Syncer) window(path string) (store.Window, bool) {
	ws, ok := s.store.(WindowStore)
	if !ok || s.cfg.WindowOverlap < 0 {
		return store.Window{}, false
	}
	return ws.Window(path)
}

// fetchWindow reads and counts a thread's window. done is false when the
// thread must be read whole instead: the window did not start where the
// store's did, or the store refused it.
func (s *Syncer) fetchWindow(ctx context.Context, p *parsers, t Summary, w store.Window) (out outcome, err error, done bool) {
	path := store.AmpServerPath(t.ID)
	ex, err := s.client.ExportFrom(ctx, t.ID, w.Start, s.cfg.MaxThreadBytes)
	if out, err, done := s.exportFailed(path, t, err); done {
		return out, err, true
	}
	// Nothing counted keeps a byte of the messages.
	defer ex.Release()
	if s.otherUsers(ex.CreatorUserID) {
		return outcomeOtherUser, nil, true
	}
	began := s.clock.Now()
	parsed, err := ex.Parse(p.whole)
	if err != nil || !startsAt(parsed, ex, w) {
		// Not the window counted before (or not readable as one): the
		// whole thread says what it is.
		s.windowed(true, true)
		return 0, nil, false
	}
	sum := thread.SummarizeItems(parsed)
	next := s.next(p, parsed, sum, ex, w.Start)
	if next != nil && next.Start == w.Start {
		next.Sum = sum
	}
	out, err = s.count(ctx, t, ex, sum, w, next, began)
	if errors.Is(err, store.ErrWindowStale) {
		s.windowed(true, true)
		return 0, nil, false
	}
	s.windowed(true, false)
	return out, err, true
}

// startsAt reports whether a window's document starts with the message the
// store's window starts with, at its index.
func startsAt(t *thread.Thread, ex Export, w store.Window) bool {
	return len(t.Messages) > 0 && t.Messages[0].Index == w.Start && len(ex.Messages) > 0 && anchor(ex.Messages[0]) == w.Anchor
}

// anchor identifies the prompt a window starts at by its bytes (its id,
// text and time): a message keyed by a numeric messageId, which is its
// place, or by its place alone, is then told from another message that
// took its place after an edit further back.
func anchor(raw []byte) uint64 { return thread.HashID(string(raw)) | 1 }

// next works out a thread's next window from the document just read (its
// messages from ex.From on): it starts at the last prompt at least
// WindowOverlap messages before the end, not before from, and holds the
// items of the messages from there (parsed again, by p.part, unless it
// starts where the document does). nil when there is none: no such
// prompt, or a thread billed by a ledger (its events name messages
// anywhere in the thread).
func (s *Syncer) next(p *parsers, parsed *thread.Thread, sum *thread.Summary, ex Export, from int) *store.NextWindow {
	if _, ok := s.store.(WindowStore); !ok || s.cfg.WindowOverlap < 0 || sum.Billing == thread.BillingLedger {
		return nil
	}
	count := ex.From + len(ex.Messages)
	at := -1
	for i := len(parsed.Messages) - 1; i >= 0; i-- {
		m := &parsed.Messages[i]
		if m.Index < max(from, 1) {
			break
		}
		if m.Index <= count-s.cfg.WindowOverlap && m.Role == thread.RoleUser && m.Prompt {
			at = i
			break
		}
	}
	if at < 0 {
		return nil
	}
	m := &parsed.Messages[at]
	next := &store.NextWindow{Window: store.Window{Start: m.Index, Anchor: anchor(ex.Messages[m.Index-ex.From]), Count: count}}
	if m.Index == ex.From {
		return next // the caller's summary is the window's
	}
	part, err := ex.parseFrom(p.part, m.Index)
	if err != nil {
		return nil
	}
	next.Sum = thread.SummarizeItems(part)
	return next
}

// windowed counts a thread read as a window, or one whose window was
// refused and that was read whole.
func (s *Syncer) windowed(window, refused bool) {
	s.winMu.Lock()
	defer s.winMu.Unlock()
	switch {
	case refused:
		s.winStats.Refused++
	case window:
		s.winStats.Windows++
	}
}

// WindowStats count the reads of threads by window since the Syncer
// started.
type WindowStats struct {
	Windows int64 // threads counted from a window
	Refused int64 // windows that could not be counted: read whole
}

// WindowStats returns the window counts so far.
func (s *Syncer) WindowStats() WindowStats {
	s.winMu.Lock()
	defer s.winMu.Unlock()
	return s.winStats
}
