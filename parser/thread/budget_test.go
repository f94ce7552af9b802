package thread

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
)

// manyModels is issue 10's thread: every assistant message names another
// model (292,794 of them held ~1 GB; scaled down here).
func manyModels(n int, distinct bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"v":1,"id":"T-00000000-0000-4000-8000-000000000001","created":1768178184664,"agentMode":"smart","messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		model := "claude-sonnet-4-5"
		if distinct {
			model = fmt.Sprintf("model-%08d", i)
		}
		fmt.Fprintf(&b, `{"role":"assistant","messageId":%d,"content":[{"type":"text","text":"x"}],"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":%q,"inputTokens":10,"outputTokens":5,"maxInputTokens":200000,"totalInputTokens":100}}`, i, model)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func TestPerFileModelBudget(t *testing.T) {
	const n = 5000
	th, err := NewParser().ParseBytes(manyModels(n, true))
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(th)
	if len(s.Tokens) != MaxModelsPerFile+1 {
		t.Errorf("%d models held for one file, want the budget %d + %q", len(s.Tokens), MaxModelsPerFile, FoldedModel)
	}
	if got := s.Tokens[FoldedModel].Output; got != 5*(n-MaxModelsPerFile) {
		t.Errorf("folded output tokens %d, want %d: folding must keep every token", got, 5*(n-MaxModelsPerFile))
	}
	if len(s.FoldedModels) != n-MaxModelsPerFile {
		t.Errorf("%d distinct folded names reported, want %d", len(s.FoldedModels), n-MaxModelsPerFile)
	}
	// The next file starts with a fresh budget.
	p := NewParser()
	p.ParseBytes(manyModels(MaxModelsPerFile+10, true))
	th, _ = p.ParseBytes(manyModels(10, true))
	if len(th.FoldedModels) != 0 || th.Messages[9].Usage.Model != "model-00000009" {
		t.Errorf("budget carried over to the next file: %d folded", len(th.FoldedModels))
	}
}

// TestManyModelsCostNoMoreThanOne: what a parsed and summarized thread
// holds does not grow with the number of distinct model names in it.
func TestManyModelsCostNoMoreThanOne(t *testing.T) {
	const n = 40_000
	live := func(distinct bool) uint64 {
		doc := manyModels(n, distinct)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p := NewParser()
		th, err := p.ParseBytes(doc)
		if err != nil {
			t.Fatal(err)
		}
		s := Summarize(th)
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(s)
		runtime.KeepAlive(th)
		runtime.KeepAlive(doc)
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
	}
	one, many := live(false), live(true)
	t.Logf("held after parse+summarize: one model %d KiB, %d models %d KiB", one>>10, n, many>>10)
	if many > one*3/2+(1<<20) {
		t.Errorf("%d distinct models hold %d KiB, one model %d KiB", n, many>>10, one>>10)
	}
}

func TestPerFileToolBudget(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"v":1,"id":"T-00000000-0000-4000-8000-000000000003","created":1768178184664,"messages":[`)
	const n = 3000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"assistant","messageId":%d,"content":[{"type":"tool_use","complete":true,"id":"tu_%d","name":"tool_%05d","input":{}}],"state":{"type":"complete","stopReason":"tool_use"}}`, i, i, i)
	}
	b.WriteString(`]}`)
	th, err := NewParser().ParseBytes(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for _, m := range th.Messages {
		for _, u := range m.ToolUses {
			distinct[u.Name] = true
		}
	}
	if len(distinct) != MaxModelsPerFile+1 || !distinct[FoldedModel] {
		t.Errorf("%d tool names held for one file, want the budget %d + %q", len(distinct), MaxModelsPerFile, FoldedModel)
	}
	if len(th.FoldedTools) != n-MaxModelsPerFile {
		t.Errorf("%d distinct folded tool names, want %d", len(th.FoldedTools), n-MaxModelsPerFile)
	}
}
