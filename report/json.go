package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/amp-exporter/amp-exporter/store"
)

// The JSON of `ccusage amp daily|monthly|session --json` (ccusage 20):
// the same names, in the same (alphabetical) order; credits are left out
// where there are none, as ccusage leaves them out. Fields may be added,
// never renamed: scripts read these.
type jsonBreakdown struct {
	CacheCreationTokens int64   `json:"cacheCreationTokens"`
	CacheReadTokens     int64   `json:"cacheReadTokens"`
	Cost                float64 `json:"cost"`
	Credits             float64 `json:"credits,omitempty"`
	InputTokens         int64   `json:"inputTokens"`
	ModelName           string  `json:"modelName"`
	OutputTokens        int64   `json:"outputTokens"`
}

// jsonRepository is a period's spending in one repository (added to
// ccusage's fields; present when the repository label is on).
type jsonRepository struct {
	CacheCreationTokens int64   `json:"cacheCreationTokens"`
	CacheReadTokens     int64   `json:"cacheReadTokens"`
	Cost                float64 `json:"cost"`
	Credits             float64 `json:"credits,omitempty"`
	InputTokens         int64   `json:"inputTokens"`
	OutputTokens        int64   `json:"outputTokens"`
	Repository          string  `json:"repository"`
}

type jsonPeriod struct {
	CacheCreationTokens int64 `json:"cacheCreationTokens"`
	CacheReadTokens     int64 `json:"cacheReadTokens"`
	// Commits and PullRequests: added, what the agent's shell calls made
	// (amp_commits_total, amp_pull_requests_total).
	Commits         int64           `json:"commits"`
	Credits         float64         `json:"credits,omitempty"`
	Date            string          `json:"date,omitempty"`
	InputTokens     int64           `json:"inputTokens"`
	ModelBreakdowns []jsonBreakdown `json:"modelBreakdowns"`
	ModelsUsed      []string        `json:"modelsUsed"`
	Month           string          `json:"month,omitempty"`
	OutputTokens    int64           `json:"outputTokens"`
	PullRequests    int64           `json:"pullRequests"`
	// Repositories: added; absent when no thread has a repository.
	Repositories []jsonRepository `json:"repositories,omitempty"`
	SessionID    string           `json:"sessionId,omitempty"`
	TotalCost    float64          `json:"totalCost"`
	TotalTokens  int64            `json:"totalTokens"`
}

type jsonTotals struct {
	CacheCreationTokens int64   `json:"cacheCreationTokens"`
	CacheReadTokens     int64   `json:"cacheReadTokens"`
	Commits             int64   `json:"commits"`
	Credits             float64 `json:"credits,omitempty"`
	InputTokens         int64   `json:"inputTokens"`
	OutputTokens        int64   `json:"outputTokens"`
	PullRequests        int64   `json:"pullRequests"`
	TotalCost           float64 `json:"totalCost"`
	TotalTokens         int64   `json:"totalTokens"`
}

// credits and dollars of the fixed point.
func credits(v int64) float64 { return store.Unfixed(store.FamCredits, v) }
func dollars(v int64) float64 { return store.Unfixed(store.FamCost, v) }

// WriteJSON writes the report as ccusage writes it: an object with the
// periods under "daily", "monthly" or "sessions", and "totals"; indented
// by two spaces.
func WriteJSON(w io.Writer, r *Report) error {
	periods := make([]jsonPeriod, 0, len(r.Periods))
	for _, p := range r.Periods {
		jp := jsonPeriod{
			CacheCreationTokens: p.CacheCreation,
			CacheReadTokens:     p.CacheRead,
			Commits:             p.Commits,
			Credits:             credits(p.Credits),
			InputTokens:         p.Input,
			OutputTokens:        p.Output,
			PullRequests:        p.PullRequests,
			TotalCost:           dollars(p.Cost),
			TotalTokens:         p.Tokens(),
			ModelsUsed:          append([]string{}, p.ModelsUsed()...),
			ModelBreakdowns:     []jsonBreakdown{},
		}
		switch r.Kind {
		case Daily:
			jp.Date = p.Key
		case Monthly:
			jp.Month = p.Key
		case Session:
			jp.SessionID = p.Key
		}
		for _, name := range p.Breakdown() {
			m := p.Models[name]
			jp.ModelBreakdowns = append(jp.ModelBreakdowns, jsonBreakdown{
				CacheCreationTokens: m.CacheCreation,
				CacheReadTokens:     m.CacheRead,
				Cost:                dollars(m.Cost),
				Credits:             credits(m.Credits),
				InputTokens:         m.Input,
				ModelName:           name,
				OutputTokens:        m.Output,
			})
		}
		if len(p.Repos) > 1 || p.Repos[""] == nil {
			for _, name := range p.Repositories() {
				u := p.Repos[name]
				jp.Repositories = append(jp.Repositories, jsonRepository{
					CacheCreationTokens: u.CacheCreation,
					CacheReadTokens:     u.CacheRead,
					Cost:                dollars(u.Cost),
					Credits:             credits(u.Credits),
					InputTokens:         u.Input,
					OutputTokens:        u.Output,
					Repository:          name,
				})
			}
		}
		periods = append(periods, jp)
	}
	t := r.Totals
	totals := jsonTotals{
		CacheCreationTokens: t.CacheCreation,
		CacheReadTokens:     t.CacheRead,
		Commits:             t.Commits,
		Credits:             credits(t.Credits),
		InputTokens:         t.Input,
		OutputTokens:        t.Output,
		PullRequests:        t.PullRequests,
		TotalCost:           dollars(t.Cost),
		TotalTokens:         t.Tokens(),
	}
	// The object {"<list>": [...], "totals": {...}} as encoding/json
	// indents it, written a period at a time: a year of sessions is
	// megabytes, which encoding it whole held twice over.
	bw := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(bw, "{\n  %q: [", listName(r.Kind))
	var one bytes.Buffer
	enc := json.NewEncoder(&one)
	enc.SetEscapeHTML(false)
	write := func(v any) error {
		one.Reset()
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		_, err := bw.Write(bytes.TrimSuffix(one.Bytes(), []byte("\n")))
		return err
	}
	enc.SetIndent("    ", "  ")
	for i := range periods {
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		if err := write(&periods[i]); err != nil {
			return err
		}
	}
	if len(periods) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],\n  \"totals\": ")
	enc.SetIndent("  ", "  ")
	if err := write(totals); err != nil {
		return err
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// listName is the name of the periods' list in the JSON.
func listName(k Kind) string {
	switch k {
	case Monthly:
		return "monthly"
	case Session:
		return "sessions"
	}
	return "daily"
}
