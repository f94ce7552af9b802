package thread

// FromItems is the summary of a thread made of items, with the totals
// Summarize would give a thread with those items: for tests and tools that
// build a thread item by item rather than parse one. The summary owns
// items; its Items stay valid.
func FromItems(id, agentMode string, items []Item) *Summary {
	s := &Summary{
		ID:        id,
		AgentMode: agentMode,
		Items:     items,
		Tokens:    map[string]Tokens{},
		Credits:   map[string]float64{},
		Finished:  map[string]map[string]int{},
		ToolCalls: map[string]map[string]int{},
	}
	s.total()
	return s
}
