package ledger

import (
	"math"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// TestItemTime: where an item counts. A ledger event is stamped by the
// Amp server when it bills, so it counts at its own stamp even hours
// before its thread's created (which the client's clock stamped), as
// ccusage counts it; only a stamp before Amp existed or after now is
// bounded. A message, stamped by the same clock as its thread, is still
// placed at the thread's created when it is more than an hour older.
func TestItemTime(t *testing.T) {
	created := time.Date(2026, 3, 2, 1, 30, 0, 0, time.UTC).UnixMilli()
	now := created + 30*24*3_600_000
	b := Bounds{Floor: AmpBegan.UnixMilli(), Now: now}
	const hour = int64(3_600_000)
	ledgerItem := func(at int64, copied bool) thread.Item {
		return thread.Item{Key: thread.ItemKey(thread.ItemLedger, 7), Model: "m", At: at, Copied: copied}
	}
	messageItem := func(at int64, copied bool) thread.Item {
		return thread.Item{Key: thread.ItemKey(thread.ItemMessage, 7), Role: thread.RoleAssistant, Model: "m", At: at, Copied: copied}
	}
	tests := []struct {
		name   string
		it     thread.Item
		want   int64
		reason string
	}{
		{"ledger event after created", ledgerItem(created+hour, false), created + hour, ""},
		{"ledger event within the hour before created", ledgerItem(created-hour/2, false), created - hour/2, ""},
		{"ledger event hours before created", ledgerItem(created-5*hour-hour/2, false), created - 5*hour - hour/2, ""},
		{"ledger event a day before created", ledgerItem(created-30*hour, false), created - 30*hour, ""},
		{"ledger event a fork copied", ledgerItem(created-30*hour, true), created - 30*hour, ""},
		{"ledger event before Amp", ledgerItem(1000, false), created, BoundBeforeAmp},
		{"ledger event after now", ledgerItem(now+1, false), math.MaxInt64, BoundFuture},
		{"ledger event without a time", ledgerItem(0, false), 0, ""},
		{"message after created", messageItem(created+hour, false), created + hour, ""},
		{"message within the hour before created", messageItem(created-hour/2, false), created - hour/2, ""},
		{"message hours before created", messageItem(created-5*hour, false), created, BoundBeforeCreated},
		{"message a fork copied", messageItem(created-5*hour, true), created - 5*hour, ""},
		{"message before Amp", messageItem(1000, false), created, BoundBeforeCreated},
		{"message after now", messageItem(now+1, false), math.MaxInt64, BoundFuture},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := &thread.Summary{Created: created, Items: []thread.Item{tt.it}}
			lo := b.ThreadFloor(sum)
			got, reason := b.ItemTime(sum, lo, &sum.Items[0])
			if got != tt.want || reason != tt.reason {
				t.Errorf("ItemTime = %s, %q; want %s, %q", ms(got), reason, ms(tt.want), tt.reason)
			}
		})
	}
}

func ms(t int64) string {
	if t == math.MaxInt64 {
		return "never"
	}
	return time.UnixMilli(t).UTC().Format(time.RFC3339)
}
