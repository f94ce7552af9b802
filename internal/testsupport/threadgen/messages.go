package threadgen

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Messages.

func (t *threadBuilder) prompt(ex int) {
	w, r := t.w, t.r
	if ex > 0 {
		// Time to read the answer and type; sometimes a coffee, a meeting
		// or the next morning.
		switch u := r.Float64(); {
		case u < 0.7:
			t.now += 15_000 + int64(r.IntN(240_000))
		case u < 0.95:
			t.now += 300_000 + int64(r.IntN(3_000_000))
		default:
			t.now += 3_600_000 + int64(r.IntN(60_000_000))
		}
	}
	t.steer()
	start := len(w.b)
	imgBytes := 0
	w.elemObject()
	w.keyString("role", "user")
	w.keyInt("messageId", t.msgID)
	w.keyArray("content")
	w.elemObject()
	w.keyString("type", "text")
	w.keyStringStart("text")
	t.promptText()
	w.stringEnd()
	w.endObj()
	// A screenshot, sized from 50 kB to 3 MB but never more than a tenth
	// of the thread.
	if !t.nested && r.Float64() < t.psi/16 {
		size := int(50e3 * math.Exp(r.Float64()*math.Log(60)))
		size = min(size, t.target/10, t.remaining()/3)
		if size >= 50e3 {
			w.elemObject()
			w.keyString("type", "image")
			w.keyObject("source")
			w.keyString("type", "base64")
			mt := pick(r, []string{"image/png", "image/png", "image/png", "image/jpeg", "image/webp"})
			w.keyString("mediaType", mt)
			w.keyStringStart("data")
			t.base64Image(size, mt)
			w.stringEnd()
			w.endObj()
			w.endObj()
			imgBytes = size
		}
	}
	w.endArr()
	w.keyString("agentMode", t.mode)
	w.keyObject("meta")
	w.keyInt("sentAt", t.now)
	w.endObj()
	w.endObj()
	t.msgID++
	t.ctx += int64(len(w.b)-start-imgBytes)/4 + int64(imgBytes/50e3*200)
}

func (t *threadBuilder) promptText() {
	r := t.r
	t.fill(poolPrompt, max(20, t.other(260, 1.0, 6000)))
	if r.IntN(12) == 0 {
		// A pasted log or stack trace.
		t.w.b = append(t.w.b, "\\n\\n```\\n"...)
		t.fill(shellPools[r.IntN(len(shellPools))], t.other(3000, 0.9, 40e3))
		t.w.b = append(t.w.b, "```"...)
	}
}

type call struct {
	kind   toolKind
	id     string
	size   int // planned result bytes
	rel    string
	status string
	image  bool
	// added and removed are the lines a known edit changes
	// (Options.Edits); exit is a shell command's exit code.
	added, removed int64
	exit           int64
	// vcs is the case of vcsCases a shell call runs, 1-based; 0 for an
	// everyday command (Options.Commits).
	vcs int
	// model is the model of the assistant message that made the call.
	model string
}

// toolCycle writes an assistant message with tool calls and the user
// message carrying their results. It reports false when the user cancelled
// the turn.
func (t *threadBuilder) toolCycle() bool {
	r := t.r
	n := 1
	switch u := r.Float64(); {
	case u < 0.08:
		n = 2
	case u < 0.13:
		n = 3
	case u < 0.15:
		n = 4
	}
	n = max(1, min(n, t.remaining()/5000))
	cancelled := !t.nested && r.IntN(60) == 0
	calls := make([]call, n)
	t.steer()
	for k := range calls {
		c := &calls[k]
		c.kind = t.tools.pick(r)
		if t.nested {
			c.kind = subagentTools.pick(r)
		}
		if c.kind == tTask && t.target < 60e3 {
			c.kind = tRead
		}
		if t.edits && c.kind == tEdit && !t.nested && r.IntN(10) == 0 {
			c.kind = pick(r, []toolKind{tFastmod, tEnqueueEdit})
		}
		c.id = t.toolUseID()
		c.rel = t.proj.files[r.IntN(len(t.proj.files))]
		size := t.meanTool * toolMult[c.kind] * t.phi * lognorm(r, 1, 1.25) / math.Exp(1.25*1.25/2)
		if t.target > 4e6 && r.IntN(100) == 0 {
			// Monster threads have a few huge outputs: a whole build
			// log, a data file, a big screenshot.
			size = 400e3 * math.Exp(r.Float64()*math.Log(10))
			switch {
			case t.model.openai:
				c.kind = tShell
			case r.IntN(2) == 0:
				c.kind = tBash
			default:
				c.kind = tRead
			}
		}
		c.size = int(size)
		c.vcs = t.vcsCaseFor(c)
		c.status = "done"
		switch u := r.Float64(); {
		case cancelled:
			c.status = "cancelled"
		case u < 0.05:
			c.status = "error"
		case u < 0.07:
			c.status = "rejected-by-user"
		}
		if c.kind == tRead && c.size > 20e3 && r.IntN(25) == 0 {
			c.image = true
			c.size = min(c.size, 3e6)
		}
	}
	t.assistant(calls, cancelled)
	room := t.remaining() - 300*n - 1600
	for k := range calls {
		calls[k].size = max(120, min(calls[k].size, room/n))
	}
	t.results(calls)
	return !cancelled
}

func (t *threadBuilder) toolUseID() string {
	if t.model.openai {
		return "toolu_" + uuid4(t.r)
	}
	return "toolu_01" + randAlnum(t.r, 22)
}

// assistant writes an assistant message: optional thinking and text, then
// the tool calls (none for a final answer).
func (t *threadBuilder) assistant(calls []call, cancelled bool) {
	t.assistantMsg(calls, cancelled, false)
}

func (t *threadBuilder) answer(last bool) {
	t.steer()
	t.assistantMsg(nil, false, last)
}

func (t *threadBuilder) assistantMsg(calls []call, cancelled, last bool) {
	w, r := t.w, t.r
	start := len(w.b)
	w.elemObject()
	w.keyString("role", "assistant")
	w.keyInt("messageId", t.msgID)
	w.keyArray("content")
	outBytes := 0
	if r.IntN(4) != 0 {
		w.elemObject()
		w.keyString("type", "thinking")
		w.keyStringStart("thinking")
		s := len(w.b)
		t.fillProse(poolThinking, t.other(380, 0.9, 9000))
		outBytes += len(w.b) - s
		w.stringEnd()
		if !t.model.openai {
			w.keyStringStart("signature")
			t.base64Raw(4 * int(lognorm(r, 90, 0.45)))
			w.stringEnd()
			w.keyString("provider", "anthropic")
		} else {
			w.keyString("provider", "openai")
		}
		w.endObj()
	}
	final := calls == nil
	if final || r.IntN(2) == 0 {
		w.elemObject()
		w.keyString("type", "text")
		w.keyStringStart("text")
		s := len(w.b)
		switch {
		case final && last:
			// The last answer fills what is left of the thread's budget.
			n := t.remaining() - 450
			t.fillMarkdown(max(160, min(n, 40_000)))
		case final:
			t.fillMarkdown(t.other(850, 0.8, 12_000))
		default:
			t.fillProse(poolText, t.other(140, 0.8, 2000))
		}
		outBytes += len(w.b) - s
		w.stringEnd()
		w.endObj()
	}
	for i := range calls {
		s := len(w.b)
		t.toolUse(&calls[i])
		outBytes += len(w.b) - s
	}
	w.endArr()
	// The inference: output tokens from the content, input from the
	// context so far.
	out := int64(outBytes)/4 + 20 + int64(r.IntN(200))
	u := t.inference(out)
	t.tally(u)
	for i := range calls {
		calls[i].model = u.model
	}
	w.keyObject("state")
	switch {
	case cancelled:
		w.keyString("type", "cancelled")
	case final:
		w.keyString("type", "complete")
		w.keyString("stopReason", "end_turn")
	default:
		w.keyString("type", "complete")
		w.keyString("stopReason", "tool_use")
	}
	w.endObj()
	w.key("usage")
	t.writeUsage(u)
	w.endObj()
	if t.ledger && !t.nested {
		t.events = append(t.events, ledgerEvent{
			fromID: t.msgID - 1, toID: t.msgID, ms: u.ms - t.serverBehind, model: u.model,
			in: u.in, out: u.out, credits: t.credits(u),
		})
		if t.nAssist == 0 && r.IntN(3) != 0 {
			t.events = append(t.events, ledgerEvent{
				fromID: 0, ms: u.ms - t.serverBehind + 800 + int64(r.IntN(2000)), model: mHaiku.name,
				in: 300 + int64(r.IntN(700)), out: 6 + int64(r.IntN(14)), title: true,
			})
			e := &t.events[len(t.events)-1]
			e.credits = round4((float64(e.in)*mHaiku.in + float64(e.out)*mHaiku.out) / 1e6)
		}
	}
	t.msgID++
	t.nAssist++
	t.ctx += int64(len(w.b)-start) / 5
}

// inference advances the clock by the time an inference takes and returns
// its usage, with the context growing through the thread and the prompt
// cache warm while turns follow each other within five minutes.
func (t *threadBuilder) inference(out int64) usage {
	r := t.r
	m := t.model
	if t.nested {
		m = mSonnet
		if t.model.openai {
			m = mCodex
		}
	}
	t.now += 1500 + int64(r.IntN(3000)) + out*1000/int64(40+r.IntN(80))
	total := t.sysTokens + t.ctx
	limit := m.maxInput * 95 / 100
	if total > limit {
		// A full context: what the model sees is truncated, it stops
		// growing.
		total = limit - int64(r.IntN(4000))
	}
	cached := t.cached
	if t.lastInfer == 0 || t.now-t.lastInfer > 5*60_000 {
		cached = 0
		if r.IntN(3) != 0 {
			cached = t.sysTokens // the system prompt and tools, shared across threads
		}
	}
	cached = min(cached, total-100-int64(r.IntN(3000)))
	u := usage{model: m.name, maxIn: m.maxInput, out: out, total: total, ms: t.now}
	if !t.nested {
		u.speed = t.speedNow()
	}
	if m.openai {
		cached = cached / 128 * 128
		u.cacheRead = cached
		u.cacheCreate = total - cached
	} else {
		u.in = min(int64(1+r.IntN(12)), total-cached)
		u.cacheRead = cached
		u.cacheCreate = total - cached - u.in
	}
	t.cached = total
	t.lastInfer = t.now
	if t.nested {
		t.inferLog = append(t.inferLog, u)
		return u
	}
	t.useModel(m.name)
	l := &t.last
	l.model = u.model
	l.maxIn = max(l.maxIn, u.maxIn)
	l.in = max(l.in, u.in)
	l.out = max(l.out, u.out)
	l.cacheCreate = max(l.cacheCreate, u.cacheCreate)
	l.cacheRead = max(l.cacheRead, u.cacheRead)
	l.total = max(l.total, u.total)
	l.ms = max(l.ms, u.ms)
	return u
}

func (t *threadBuilder) credits(u usage) float64 {
	m := t.model
	c := float64(u.in)*m.in + float64(u.out)*m.out + float64(u.cacheCreate)*m.cacheWrite + float64(u.cacheRead)*m.cacheR
	return round4(c / 1e6)
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func (t *threadBuilder) writeUsage(u usage) {
	w := t.w
	w.obj()
	w.keyString("model", u.model)
	w.writeFeatures(u.speed)
	w.keyInt("maxInputTokens", u.maxIn)
	w.keyInt("inputTokens", u.in)
	w.keyInt("outputTokens", u.out)
	w.keyInt("cacheCreationInputTokens", u.cacheCreate)
	w.keyInt("cacheReadInputTokens", u.cacheRead)
	w.keyInt("totalInputTokens", u.total)
	w.key("timestamp")
	w.b = append(w.b, '"')
	w.b = time.UnixMilli(u.ms).UTC().AppendFormat(w.b, "2006-01-02T15:04:05.000Z")
	w.b = append(w.b, '"')
	w.endObj()
}

func (t *threadBuilder) writeLedger() {
	w := t.w
	w.keyObject("usageLedger")
	w.keyArray("events")
	for _, e := range t.events {
		w.elemObject()
		w.keyString("id", uuid4(t.r))
		w.key("timestamp")
		w.b = append(w.b, '"')
		w.b = time.UnixMilli(e.ms).UTC().AppendFormat(w.b, "2006-01-02T15:04:05Z")
		w.b = append(w.b, '"')
		w.keyString("model", e.model)
		w.keyFloat("credits", e.credits)
		w.keyObject("tokens")
		w.keyInt("input", e.in)
		w.keyInt("output", e.out)
		w.endObj()
		if e.title {
			w.keyString("operationType", "title-generation")
			w.keyInt("fromMessageId", e.fromID)
		} else {
			w.keyString("operationType", "inference")
			w.keyInt("fromMessageId", e.fromID)
			w.keyInt("toMessageId", e.toID)
		}
		w.endObj()
	}
	w.endArr()
	w.endObj()
}

// toolUse writes a tool_use block with the tool's input.
func (t *threadBuilder) toolUse(c *call) {
	w, r, p := t.w, t.r, t.proj
	w.elemObject()
	w.keyString("type", "tool_use")
	w.keyBool("complete", true)
	w.keyString("id", c.id)
	w.keyString("name", toolNames[c.kind])
	w.keyObject("input")
	switch c.kind {
	case tBash:
		w.keyString("cmd", t.shellCommand(c))
		w.keyString("cwd", p.root)
	case tShell:
		w.keyString("command", t.shellCommand(c))
		w.keyString("workdir", p.root)
	case tRead:
		if c.image {
			c.rel = pick(r, []string{"docs/screenshot.png", "assets/logo.png", "tmp/failing-test.png", "design/mockup.png"})
		}
		w.keyString("path", p.abs(c.rel))
		if !c.image && r.IntN(3) == 0 {
			a := int64(1 + r.IntN(400))
			w.keyArray("read_range")
			w.elemInt(a)
			w.elemInt(a + int64(20+r.IntN(300)))
			w.endArr()
		}
	case tGrep:
		w.keyString("pattern", pick(r, grepPatterns))
		w.keyString("path", p.root)
		if r.IntN(3) == 0 {
			w.keyString("glob", pick(r, globPatterns[p.lang]))
		}
		if r.IntN(4) == 0 {
			w.keyBool("caseSensitive", false)
		}
	case tGlob:
		w.keyString("filePattern", pick(r, globPatterns[p.lang]))
		if r.IntN(3) == 0 {
			w.keyInt("limit", 100)
		}
	case tEdit:
		w.keyString("path", p.abs(c.rel))
		if t.edits {
			t.knownEdit(c)
			break
		}
		w.keyStringStart("old_str")
		t.fillCode(p.lang, t.other(300, 0.9, 6000))
		w.stringEnd()
		w.keyStringStart("new_str")
		t.fillCode(p.lang, t.other(420, 0.9, 8000))
		w.stringEnd()
	case tCreate:
		w.keyString("path", p.abs(c.rel))
		if t.edits {
			t.knownCreate(c)
			break
		}
		w.keyStringStart("content")
		t.fillCode(p.lang, t.other(2500, 0.9, 40_000))
		w.stringEnd()
	case tWebPage:
		w.keyString("url", pick(r, urls))
		if r.IntN(2) == 0 {
			w.keyString("objective", pick(r, objectives))
		}
	case tWebSearch:
		w.keyString("objective", pick(r, objectives))
		w.keyArray("search_queries")
		for range 1 + r.IntN(3) {
			w.elemString(pick(r, searchQueries))
		}
		w.endArr()
	case tTask:
		w.keyStringStart("prompt")
		t.fillProse(poolText, t.other(900, 0.6, 6000))
		w.stringEnd()
		w.keyString("description", pick(r, objectives))
	case tFinder:
		w.keyString("query", pick(r, objectives))
	case tOracle:
		w.keyString("task", pick(r, objectives))
		w.keyStringStart("context")
		t.fillProse(poolText, t.other(600, 0.6, 6000))
		w.stringEnd()
		w.keyArray("files")
		for range 1 + r.IntN(4) {
			w.elemString(p.abs(p.files[r.IntN(len(p.files))]))
		}
		w.endArr()
	case tMCP:
		w.keyString("query", "repo:"+p.org+"/"+p.name+" "+pick(r, funcNames))
	case tDeploy:
		w.keyString("environment", pick(r, []string{"staging", "staging", "preview", "production"}))
		w.keyString("service", pick(r, []string{"api", "web", "worker", "scheduler"}))
	case tFastmod, tEnqueueEdit:
		t.legacyEdit(c)
	case tPatch:
		if t.edits {
			t.knownPatch(c)
			break
		}
		w.keyStringStart("patchText")
		w.b = append(w.b, `*** Begin Patch\n*** Update File: `...)
		w.b = appendEscaped(w.b, p.abs(c.rel))
		w.b = append(w.b, `\n@@\n`...)
		t.fillDiff(p.lang, t.other(700, 0.8, 12_000))
		w.b = append(w.b, `*** End Patch`...)
		w.stringEnd()
	}
	w.endObj()
	w.endObj()
}

// results writes the tool-result carrier for calls.
func (t *threadBuilder) results(calls []call) {
	w, r := t.w, t.r
	t.now += 200 + int64(r.IntN(2500))
	w.elemObject()
	w.keyString("role", "user")
	w.keyInt("messageId", t.msgID)
	w.keyArray("content")
	for i := range calls {
		c := &calls[i]
		start := len(w.b)
		w.elemObject()
		w.keyString("type", "tool_result")
		w.keyString("toolUseID", c.id)
		w.keyObject("run")
		w.keyString("status", c.status)
		switch c.status {
		case "done":
			t.result(c)
		case "error":
			w.keyObject("error")
			w.keyString("message", pick(r, errorMessages))
			w.endObj()
			w.keyEmpty("progress", "{}")
		case "cancelled":
			w.keyString("reason", pick(r, []string{"user cancelled", "Cancelled by user", "interrupted"}))
			w.keyEmpty("progress", "{}")
		default: // rejected-by-user
			if r.IntN(2) == 0 {
				w.keyString("reason", pick(r, []string{"not now", "don't run that, use the make target", "wrong file"}))
			}
			w.keyEmpty("progress", "{}")
		}
		w.endObj()
		w.endObj()
		t.tallyCall(c)
		n := len(w.b) - start
		t.toolBytes += n
		tok := int64(n / 4)
		if c.image {
			tok = 1600
		}
		t.ctx += min(tok, 25_000)
		t.nTool++
		// Running the tool takes time too.
		t.now += 100 + int64(r.IntN(4000))
		if c.kind == tTask || c.kind == tOracle {
			t.now += 20_000 + int64(r.IntN(200_000))
		}
	}
	w.endArr()
	w.endObj()
	t.msgID++
}

// result writes the result, progress and trackFiles of a done run, about
// c.size bytes in all.
func (t *threadBuilder) result(c *call) {
	w, r, p := t.w, t.r, t.proj
	n := max(0, c.size-180)
	track := false
	switch c.kind {
	case tBash, tShell, tDeploy:
		w.keyObject("result")
		if c.vcs > 0 {
			vc := &vcsCases[c.vcs-1]
			w.keyString("output", vc.output)
			c.exit = vc.exit
			w.keyInt("exitCode", c.exit)
			w.endObj()
			break
		}
		w.keyStringStart("output")
		if c.kind == tDeploy {
			t.fill(poolDeploy, n)
		} else {
			t.fill(shellPools[r.IntN(len(shellPools))], n)
		}
		w.stringEnd()
		c.exit = t.shellExit()
		w.keyInt("exitCode", c.exit)
		w.endObj()
	case tRead:
		w.keyObject("result")
		w.keyString("absolutePath", p.abs(c.rel))
		w.keyStringStart("content")
		if c.image {
			t.base64Image(n, "image/png")
			w.stringEnd()
			w.keyBool("isImage", true)
			w.keyObject("imageInfo")
			w.keyString("mimeType", "image/png")
			w.keyInt("size", int64(n)/4*3)
			w.endObj()
		} else {
			t.fillNumberedCode(p.lang, n)
			w.stringEnd()
		}
		w.endObj()
		track = true
	case tGrep:
		w.keyArray("result")
		for s := len(w.b); len(w.b)-s < n; {
			w.sep()
			w.b = append(w.b, '"')
			w.b = appendEscaped(w.b, p.abs(p.files[r.IntN(len(p.files))]))
			w.b = append(w.b, ':')
			w.b = strconv.AppendInt(w.b, int64(1+r.IntN(900)), 10)
			w.b = append(w.b, ':')
			line := pick(r, codePools[p.lang].lines)
			w.b = append(w.b, line[:len(line)-2]...) // without its \n
			w.b = append(w.b, '"')
		}
		w.endArr()
	case tGlob:
		w.keyArray("result")
		for s := len(w.b); len(w.b)-s < n; {
			w.elemString(p.abs(pick(r, langFiles[p.lang])))
		}
		w.endArr()
	case tEdit:
		w.keyObject("result")
		w.keyStringStart("diff")
		w.b = append(w.b, "```diff\\nIndex: "...)
		w.b = appendEscaped(w.b, p.abs(c.rel))
		w.b = append(w.b, `\n===================================================================\n--- `...)
		w.b = appendEscaped(w.b, p.abs(c.rel))
		w.b = append(w.b, `\toriginal\n+++ `...)
		w.b = appendEscaped(w.b, p.abs(c.rel))
		a := int64(1 + r.IntN(500))
		b := a + int64(3+r.IntN(40))
		w.b = fmt.Appendf(w.b, `\tmodified\n@@ -%d,%d +%d,%d @@\n`, a, b-a, a, b-a+int64(r.IntN(6)))
		t.fillDiff(p.lang, n-200)
		w.b = append(w.b, "```"...)
		w.stringEnd()
		w.keyArray("lineRange")
		w.elemInt(a)
		w.elemInt(b)
		w.endArr()
		w.endObj()
		track = true
	case tCreate:
		w.keyString("result", "Successfully created file "+p.abs(c.rel))
		track = true
	case tPatch:
		w.keyString("result", "Done!\nM "+c.rel+"\n")
		track = true
	case tFastmod, tEnqueueEdit:
		w.keyString("result", "Done")
		track = true
	case tWebPage:
		w.keyStringStart("result")
		t.fillMarkdown(n)
		w.stringEnd()
	case tWebSearch:
		w.keyArray("result")
		for s := len(w.b); len(w.b)-s < n; {
			w.elemObject()
			w.keyString("title", pick(r, titles))
			w.keyString("url", pick(r, urls))
			w.keyStringStart("content")
			t.fillMarkdown(min(n-(len(w.b)-s), 300+r.IntN(3000)))
			w.stringEnd()
			w.endObj()
		}
		w.endArr()
	case tMCP:
		w.keyArray("result")
		for s := len(w.b); len(w.b)-s < n; {
			w.elemObject()
			w.keyString("type", "text")
			w.keyStringStart("text")
			t.fill(poolJSONText, min(n-(len(w.b)-s), 200+r.IntN(4000)))
			w.stringEnd()
			w.endObj()
		}
		w.endArr()
	case tFinder, tOracle, tTask:
		if t.subagentResult(c, n) {
			return
		}
	}
	w.keyEmpty("progress", "{}")
	if track {
		w.keyArray("trackFiles")
		w.elemString(p.fileURI(c.rel))
		w.endArr()
	} else {
		w.keyEmpty("trackFiles", "[]")
	}
}

// subagentResult writes the result of a finder, oracle or task run: the
// subagent's answer, then (for larger runs) its conversation. done is
// whether the run's object is complete (a finder's short answer is not:
// its progress and trackFiles follow, as for other tools).
func (t *threadBuilder) subagentResult(c *call, n int) (done bool) {
	w, r, p := t.w, t.r, t.proj
	switch c.kind {
	case tFinder:
		// The finder subagent's answer: files and snippets, then (for
		// larger runs) its conversation.
		s := len(w.b)
		m := n
		if n > 8000 {
			m = n / 4
		}
		w.keyStringStart("result")
		for s := len(w.b); len(w.b)-s < m; {
			w.b = appendEscaped(w.b, p.abs(p.files[r.IntN(len(p.files))]))
			w.b = append(w.b, "\\n```\\n"...)
			t.fillCode(p.lang, 200+r.IntN(1500))
			w.b = append(w.b, "```\\n\\n"...)
		}
		w.stringEnd()
		if n > 8000 {
			w.keyEmpty("progress", "[]")
			w.keyObject("~debug")
			t.subagent(max(2000, n-(len(w.b)-s)))
			w.endObj()
			return true
		}
		return false
	case tOracle, tTask:
		s := len(w.b)
		w.keyStringStart("result")
		t.fillMarkdown(min(n/6+200, 20_000))
		w.stringEnd()
		w.keyEmpty("progress", "[]")
		if n < 8000 {
			return true
		}
		w.keyObject("~debug")
		t.subagent(max(2000, n-(len(w.b)-s)))
		w.endObj()
		return true
	}
	return false
}

// subagent writes the conversation and inferences of a subagent run into
// the open ~debug object, about size bytes.
func (t *threadBuilder) subagent(size int) {
	w := t.w
	child := &threadBuilder{
		r: t.r, w: w, nested: true,
		id: t.id, created: t.created, target: size,
		mode: t.mode, model: t.model, tools: subagentTools,
		share: t.share, meanTool: max(600, t.meanTool*0.8), proj: t.proj,
		now: t.now, sysTokens: 6000 + int64(t.r.IntN(4000)),
	}
	w.keyArray("conversation")
	child.base = len(w.b)
	child.conversation()
	w.endArr()
	w.keyArray("inferences")
	for _, u := range child.inferLog {
		w.elemObject()
		w.keyString("id", "inf_"+randAlnum(t.r, 20))
		w.keyString("model", u.model)
		w.key("usage")
		child.writeUsage(u)
		w.endObj()
	}
	w.endArr()
	t.now = child.now
}
