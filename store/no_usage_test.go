package store

import "testing"

// A finished assistant message that carries no usage block counts once in
// amp_messages_without_usage_total, however often its thread is rewritten;
// one still streaming does not count (its usage may yet arrive).
func TestMessagesWithoutUsage(t *testing.T) {
	const noUsage = "null"
	for _, tc := range []struct {
		name      string
		snapshots [][]string // the thread's messages, snapshot by snapshot
		want      int64
	}{
		{"finished without usage", [][]string{{assistantMsg(1, stEndTurn, noUsage)}}, 1},
		{"finished with usage", [][]string{{assistantMsg(1, stEndTurn, usageOf("m1", 10, 100))}}, 0},
		{"streaming without usage", [][]string{{assistantMsg(1, stStreaming, noUsage)}}, 0},
		{"usage arrives when it finishes", [][]string{
			{assistantMsg(1, stStreaming, noUsage)},
			{assistantMsg(1, stEndTurn, usageOf("m1", 10, 100))},
		}, 0},
		{"cancelled without usage, rewritten", [][]string{
			{assistantMsg(1, stCancelled, noUsage)},
			{assistantMsg(1, stCancelled, noUsage), userMsg(2, "again")},
			{assistantMsg(1, stCancelled, noUsage), userMsg(2, "again"), assistantMsg(3, stStreaming, noUsage)},
		}, 1},
		{"two without usage", [][]string{
			{assistantMsg(1, stError, noUsage), userMsg(2, "retry"), assistantMsg(3, stEndTurn, noUsage)},
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(0)
			for i, msgs := range tc.snapshots {
				msgs = append([]string{userMsg(0, "go")}, msgs...)
				s.Apply("/d/T-1.json", FileVersion{Size: int64(i + 1)}, summaryOf(t, threadDoc("T-1", "", msgs...)))
			}
			if got := familySum(s, FamNoUsage); got != tc.want {
				t.Errorf("messages without usage %d, want %d", got, tc.want)
			}
		})
	}
}
