package threadgen

import (
	"encoding/json"
	"time"
)

// Long is one long thread: active four hours a day (09:07 to 13:08 UTC)
// for Days days from Start, each quarter hour an answer of a main model
// and one of a small model, the tokens varying from one to the next so
// that spend moved to another day shows. Two models' six series a quarter
// hour, 16 quarter hours a day: 17,280 ledger rows for 90 days.
type Long struct {
	Start time.Time
	Days  int
}

// LongAnswer is one assistant message of a long thread.
type LongAnswer struct {
	At                                      time.Time
	Model                                   string
	Input, Output, CacheRead, CacheCreation int64
	Credits                                 float64
}

// Answers are the thread's assistant messages, in order.
func (lt Long) Answers() []LongAnswer {
	var out []LongAnswer
	for d := range lt.Days {
		for q := range 16 {
			at := lt.Start.AddDate(0, 0, d).Add(9*time.Hour + time.Duration(q)*15*time.Minute + 7*time.Minute)
			n := int64(d*16 + q)
			out = append(out,
				LongAnswer{at, "claude-opus-4-6", 100 + n%37, 200 + n%53, 10_000 + 7*n, 500 + n%11, 0.25},
				LongAnswer{at.Add(time.Minute), "claude-haiku-4-5-20251001", 20 + n%7, 30 + n%5, 2_000 + n, 40 + n%3, 0.01})
		}
	}
	return out
}

// File is the thread as an Amp thread file.
func (lt Long) File(id string) []byte {
	type usage struct {
		Model         string  `json:"model"`
		Input         int64   `json:"inputTokens"`
		Output        int64   `json:"outputTokens"`
		CacheCreation int64   `json:"cacheCreationInputTokens"`
		CacheRead     int64   `json:"cacheReadInputTokens"`
		Timestamp     string  `json:"timestamp"`
		Credits       float64 `json:"credits"`
	}
	type state struct {
		Type       string `json:"type"`
		StopReason string `json:"stopReason"`
	}
	type message struct {
		Role      string `json:"role"`
		MessageID int    `json:"messageId"`
		State     state  `json:"state"`
		Usage     usage  `json:"usage"`
	}
	var msgs []message
	for i, a := range lt.Answers() {
		msgs = append(msgs, message{"assistant", i, state{"complete", "end_turn"},
			usage{a.Model, a.Input, a.Output, a.CacheCreation, a.CacheRead, a.At.UTC().Format(time.RFC3339Nano), a.Credits}})
	}
	data, err := json.Marshal(map[string]any{"v": len(msgs), "id": id, "created": lt.Start.UnixMilli(),
		"agentMode": "smart", "messages": msgs})
	if err != nil {
		panic(err) // plain values only
	}
	return data
}

// LongDay is what a long thread spent in one day: tokens, and credits in
// 1e-9 credits.
type LongDay struct {
	Tokens
	Credits int64
}

// Daily is what the thread spent per day of loc (YYYY-MM-DD), from what
// it wrote, not read back.
func (lt Long) Daily(loc *time.Location) map[string]LongDay {
	out := map[string]LongDay{}
	for _, a := range lt.Answers() {
		day := a.At.In(loc).Format(time.DateOnly)
		u := out[day]
		u.Input += a.Input
		u.Output += a.Output
		u.CacheRead += a.CacheRead
		u.CacheCreation += a.CacheCreation
		u.Credits += int64(a.Credits * 1e9)
		out[day] = u
	}
	return out
}
