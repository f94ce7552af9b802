package store

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// editThread is a thread of a prompt and then assistant messages of random
// models, each making one to three edit_file or create_file calls, with
// their results (done, error, rejected-by-user or cancelled).
func editThread(rng *rand.Rand) []string {
	models := []string{"claude-sonnet-4-5-20250929", "claude-opus-4-6", "gpt-5", ""}
	statuses := []string{"done", "done", "done", "error", "rejected-by-user", "cancelled"}
	lines := func() string {
		var b strings.Builder
		for i := range rng.IntN(6) {
			fmt.Fprintf(&b, "l%d\n", rng.IntN(4)+i)
		}
		return b.String()
	}
	msgs := []string{userMsg(0, "go")}
	id, use := 1, 0
	for range 2 + rng.IntN(6) {
		var uses, results []string
		for range 1 + rng.IntN(3) {
			use++
			input := fmt.Sprintf(`{"path":"f%d","old_str":"%s","new_str":"%s"}`, use, lines(), lines())
			name := "edit_file"
			if rng.IntN(3) == 0 {
				input, name = fmt.Sprintf(`{"path":"f%d","content":"%s"}`, use, lines()), "create_file"
			}
			uses = append(uses, fmt.Sprintf(`{"type":"tool_use","id":"tu%d","name":%q,"complete":true,"input":%s}`, use, name, input))
			results = append(results, fmt.Sprintf(`{"type":"tool_result","toolUseID":"tu%d","run":{"status":%q}}`, use, statuses[rng.IntN(len(statuses))]))
		}
		model := models[rng.IntN(len(models))]
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","messageId":%d,"content":[%s],"state":%s,"usage":%s}`, id, strings.Join(uses, ","), stToolUse, usageOf(model, 10, 100)),
			fmt.Sprintf(`{"role":"user","messageId":%d,"content":[%s]}`, id+1, strings.Join(results, ",")))
		id += 2
	}
	return append(msgs, assistantMsg(id, stEndTurn, usageOf("claude-opus-4-6", 1, 2)))
}
