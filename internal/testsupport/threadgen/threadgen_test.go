package threadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// ampThread is the part of a thread file the tests check.
type ampThread struct {
	V             int64  `json:"v"`
	ID            string `json:"id"`
	Created       int64  `json:"created"`
	Title         string `json:"title"`
	AgentMode     string `json:"agentMode"`
	NextMessageID int64  `json:"nextMessageId"`
	Env           struct {
		Initial struct {
			Trees []struct {
				DisplayName string `json:"displayName"`
				URI         string `json:"uri"`
				Repository  struct {
					Type, URL, Ref, Sha string
				} `json:"repository"`
			} `json:"trees"`
			Platform struct {
				OS            string `json:"os"`
				Client        string `json:"client"`
				ClientVersion string `json:"clientVersion"`
				ClientType    string `json:"clientType"`
			} `json:"platform"`
			Tags []string `json:"tags"`
		} `json:"initial"`
	} `json:"env"`
	Messages    []ampMessage `json:"messages"`
	UsageLedger *struct {
		Events []struct {
			ID            string   `json:"id"`
			Timestamp     string   `json:"timestamp"`
			Model         string   `json:"model"`
			Credits       *float64 `json:"credits"`
			Tokens        struct{ Input, Output int64 }
			OperationType string `json:"operationType"`
			FromMessageID *int64 `json:"fromMessageId"`
			ToMessageID   *int64 `json:"toMessageId"`
		} `json:"events"`
	} `json:"usageLedger"`
	Debug struct {
		LastInferenceUsage *ampUsage `json:"lastInferenceUsage"`
	} `json:"~debug"`
}

type ampMessage struct {
	Role      string     `json:"role"`
	MessageID int64      `json:"messageId"`
	Content   []ampBlock `json:"content"`
	AgentMode string     `json:"agentMode"`
	Meta      *struct {
		SentAt int64 `json:"sentAt"`
	} `json:"meta"`
	State *struct {
		Type       string `json:"type"`
		StopReason string `json:"stopReason"`
	} `json:"state"`
	Usage *ampUsage `json:"usage"`
}

type ampBlock struct {
	Type      string  `json:"type"`
	Text      *string `json:"text"`
	Thinking  *string `json:"thinking"`
	Signature string  `json:"signature"`
	Provider  string  `json:"provider"`
	Source    *struct{ Type, MediaType, Data string }
	Complete  bool            `json:"complete"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"toolUseID"`
	Run       *struct {
		Status     string          `json:"status"`
		Result     json.RawMessage `json:"result"`
		Error      *struct{ Message string }
		Reason     *string                              `json:"reason"`
		Progress   json.RawMessage                      `json:"progress"`
		TrackFiles []string                             `json:"trackFiles"`
		Debug      *struct{ Conversation []ampMessage } `json:"~debug"`
	} `json:"run"`
}

type ampUsage struct {
	Model                    string `json:"model"`
	MaxInputTokens           int64  `json:"maxInputTokens"`
	InputTokens              int64  `json:"inputTokens"`
	OutputTokens             int64  `json:"outputTokens"`
	CacheCreationInputTokens int64  `json:"cacheCreationInputTokens"`
	CacheReadInputTokens     int64  `json:"cacheReadInputTokens"`
	TotalInputTokens         int64  `json:"totalInputTokens"`
	Timestamp                string `json:"timestamp"`
}

var (
	idRE      = regexp.MustCompile(`^T-[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	toolUseRE = regexp.MustCompile(`^toolu_(01[A-Za-z0-9]{22}|[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})$`)
)

var topKeys = []string{"v", "id", "created", "title", "agentMode", "nextMessageId", "env", "messages", "~debug"}

func TestThreadsAreValidAmpThreads(t *testing.T) {
	g := New(Options{Threads: 60, TotalBytes: 60 * 150e3, Seed: 7})
	var all bytes.Buffer // for the escape checks, small threads only
	sawLedger, sawDeep, sawImage, sawTask := false, false, false, false
	statuses := map[string]int{}
	for i := range g.Len() {
		name, data := g.Thread(i)
		if !json.Valid(data) {
			t.Fatalf("thread %d: invalid JSON", i)
		}
		checkLayout(t, i, data)
		var th ampThread
		if err := json.Unmarshal(data, &th); err != nil {
			t.Fatalf("thread %d: %v", i, err)
		}
		if name != th.ID+".json" || name != g.Name(i) || !idRE.MatchString(th.ID) {
			t.Fatalf("thread %d: name %q, id %q, Name(i) %q", i, name, th.ID, g.Name(i))
		}
		if ms := uuidMs(th.ID); ms != th.Created || ms != g.Created(i).UnixMilli() {
			t.Fatalf("thread %d: uuid time %d, created %d, Created(i) %d", i, ms, th.Created, g.Created(i).UnixMilli())
		}
		if i == 0 && th.Created != DefaultStart.UnixMilli() {
			t.Errorf("thread 0 created %d, want Start %d", th.Created, DefaultStart.UnixMilli())
		}
		checkThread(t, i, &th)
		sawLedger = sawLedger || th.UsageLedger != nil
		sawDeep = sawDeep || th.AgentMode == "deep"
		for _, m := range th.Messages {
			for _, c := range m.Content {
				sawImage = sawImage || c.Type == "image"
				if c.Run != nil {
					statuses[c.Run.Status]++
					sawTask = sawTask || c.Run.Debug != nil && len(c.Run.Debug.Conversation) > 0
				}
			}
		}
		if all.Len() < 8<<20 {
			all.Write(data)
		}
	}
	if !sawLedger || !sawDeep || !sawImage || !sawTask {
		t.Errorf("corpus lacks a kind of thread: ledger %v, deep %v, image %v, Task ~debug %v", sawLedger, sawDeep, sawImage, sawTask)
	}
	for _, s := range []string{"done", "error", "cancelled", "rejected-by-user"} {
		if statuses[s] == 0 {
			t.Errorf("no tool result with status %q (%v)", s, statuses)
		}
	}
	// Escapes as JSON.stringify writes them, and none that it does not.
	b := all.Bytes()
	for _, want := range []string{`\"`, `\\`, `\n`, `\t`, `\r`, `\u001b[`, `\u0007`, `\\\\\\\\`, "é", "ü", "テスト", "✓", "🚀"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("corpus has no %q", want)
		}
	}
	if bytes.Contains(b, []byte("\t")) {
		t.Error("corpus contains a raw tab")
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		switch c := b[i+1]; c {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			// JSON.stringify writes \u only for other control characters,
			// in lower case.
			if h := string(b[i+2 : i+6]); h[:2] != "00" || h[2] > '1' || strings.ToLower(h) != h ||
				h == "0008" || h == "0009" || h == "000a" || h == "000c" || h == "000d" {
				t.Errorf("escape \\u%s, which JSON.stringify does not write", h)
			}
			i += 5
		default:
			t.Errorf("escape \\%c, which JSON.stringify does not write", c)
			i++
		}
	}
}

// checkLayout checks the file is laid out exactly as JSON.stringify(v,
// null, 2) lays it out, with the top-level keys in the CLI's order.
func checkLayout(t *testing.T, i int, data []byte) {
	t.Helper()
	var compact, pretty bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		t.Fatal(err)
	}
	if err := json.Indent(&pretty, compact.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pretty.Bytes(), data) {
		a, b := pretty.Bytes(), data
		k := 0
		for k < len(a) && k < len(b) && a[k] == b[k] {
			k++
		}
		t.Fatalf("thread %d is not laid out like JSON.stringify(v, null, 2); first difference at byte %d: %q", i, k, b[max(0, k-40):min(len(b), k+40)])
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var keys []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("thread %d: not an object", i)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	want := topKeys
	if slices.Contains(keys, "usageLedger") {
		want = slices.Insert(slices.Clone(topKeys), 8, "usageLedger")
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("thread %d: top-level keys %q, want %q", i, keys, want)
	}
}

func checkThread(t *testing.T, i int, th *ampThread) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("thread %d (%s): %s", i, th.ID, fmt.Sprintf(format, args...))
	}
	if th.V <= int64(len(th.Messages)) || th.NextMessageID != int64(len(th.Messages)) {
		fail("v %d, nextMessageId %d, %d messages", th.V, th.NextMessageID, len(th.Messages))
	}
	if th.Title == "" || len(th.Env.Initial.Trees) != 1 || th.Env.Initial.Platform.ClientType != "cli" ||
		!strings.HasPrefix(th.Env.Initial.Trees[0].URI, "file:///") || th.Env.Initial.Trees[0].Repository.Type != "git" {
		fail("header: %+v", th.Env)
	}
	models := map[string]bool{}
	assistants := map[int64]*ampUsage{}
	var lastTime int64
	checkMessages(t, th.Messages, th.AgentMode, fail, func(m *ampMessage) {
		models[m.Usage.Model] = true
		assistants[m.MessageID] = m.Usage
		ts, err := time.Parse(time.RFC3339Nano, m.Usage.Timestamp)
		if err != nil {
			fail("usage.timestamp %q: %v", m.Usage.Timestamp, err)
		}
		if ts.UnixMilli() < lastTime {
			fail("time goes backwards at message %d", m.MessageID)
		}
		lastTime = ts.UnixMilli()
	})
	var tags []string
	for m := range models {
		tags = append(tags, "model:"+m)
	}
	if !sameSet(tags, th.Env.Initial.Tags) {
		fail("tags %q, models used %q", th.Env.Initial.Tags, tags)
	}
	if th.Debug.LastInferenceUsage == nil || th.Debug.LastInferenceUsage.TotalInputTokens == 0 {
		fail("no ~debug.lastInferenceUsage")
	}
	if l := th.UsageLedger; l != nil {
		inference := 0
		for _, e := range l.Events {
			if e.Credits == nil || e.ID == "" || !strings.HasSuffix(e.Timestamp, "Z") || e.FromMessageID == nil {
				fail("ledger event %+v", e)
			}
			if e.OperationType == "title-generation" {
				if e.ToMessageID != nil {
					fail("title-generation event with toMessageId")
				}
				continue
			}
			inference++
			u := assistants[*e.ToMessageID]
			if e.OperationType != "inference" || u == nil || u.InputTokens != e.Tokens.Input || u.OutputTokens != e.Tokens.Output || u.Model != e.Model {
				fail("ledger event %+v does not match its message's usage %+v", e, u)
			}
		}
		if inference != len(assistants) {
			fail("%d inference events for %d assistant messages", inference, len(assistants))
		}
	}
}

// checkMessages checks a conversation: alternating roles, sequential ids,
// every tool_use answered by the next message, usage arithmetic.
func checkMessages(t *testing.T, msgs []ampMessage, mode string, fail func(string, ...any), assistant func(*ampMessage)) {
	t.Helper()
	var pending []string
	var lastCacheRead, firstTotal int64
	prevRole, interrupted := "assistant", false
	for k := range msgs {
		m := &msgs[k]
		if m.MessageID != int64(k) {
			fail("message %d has id %d", k, m.MessageID)
		}
		// Roles alternate, except that a prompt follows the carrier of
		// the results of a turn the user cancelled.
		if (m.Role == prevRole && !(interrupted && m.Meta != nil)) || len(m.Content) == 0 {
			fail("message %d: role %q after %q, with %d blocks", k, m.Role, prevRole, len(m.Content))
		}
		prevRole = m.Role
		interrupted = m.State != nil && m.State.Type == "cancelled" || interrupted && m.Role == "user" && m.Meta == nil
		switch m.Role {
		case "user":
			if len(pending) > 0 {
				if m.Meta != nil || len(m.Content) != len(pending) {
					fail("message %d should carry the results of %q", k, pending)
				}
				for j, c := range m.Content {
					if c.Type != "tool_result" || c.ToolUseID != pending[j] || c.Run == nil {
						fail("message %d block %d: %+v, want the result of %s", k, j, c, pending[j])
					}
					switch c.Run.Status {
					case "done":
						if len(c.Run.Result) == 0 || len(c.Run.Progress) == 0 {
							fail("done run without result or progress")
						}
					case "error":
						if c.Run.Error == nil || c.Run.Error.Message == "" {
							fail("error run without error.message")
						}
					case "cancelled", "rejected-by-user":
					default:
						fail("run status %q", c.Run.Status)
					}
					if c.Run.Debug != nil && len(c.Run.Debug.Conversation) > 0 {
						checkMessages(t, c.Run.Debug.Conversation, mode, fail, func(*ampMessage) {})
					}
				}
				pending = nil
				continue
			}
			if m.Meta == nil || m.Meta.SentAt == 0 || m.AgentMode != mode {
				fail("prompt %d without meta.sentAt or agentMode", k)
			}
			for _, c := range m.Content {
				switch {
				case c.Type == "text" && c.Text != nil && *c.Text != "":
				case c.Type == "image" && c.Source != nil && c.Source.Type == "base64" && len(c.Source.Data) >= 50e3 && len(c.Source.Data)%4 == 0:
				default:
					fail("prompt %d: block %+v", k, c)
				}
			}
		case "assistant":
			u := m.Usage
			if m.State == nil || u == nil {
				fail("assistant %d without state or usage", k)
			}
			for _, c := range m.Content {
				switch c.Type {
				case "tool_use":
					if !c.Complete || !toolUseRE.MatchString(c.ID) || c.Name == "" || len(c.Input) < 2 {
						fail("assistant %d: tool_use %+v", k, c)
					}
					if mode == "deep" && (c.Name == "Bash" || c.Name == "Task" || c.Name == "Read") {
						fail("deep-mode thread uses %s", c.Name)
					}
					pending = append(pending, c.ID)
				case "thinking":
					if c.Thinking == nil || (c.Provider == "anthropic") != (c.Signature != "") {
						fail("assistant %d: thinking block %+v", k, c)
					}
				case "text":
				default:
					fail("assistant %d: block type %q", k, c.Type)
				}
			}
			switch {
			case m.State.Type == "cancelled":
			case m.State.Type == "complete" && m.State.StopReason == "tool_use" && len(pending) > 0:
			case m.State.Type == "complete" && m.State.StopReason == "end_turn" && len(pending) == 0:
			default:
				fail("assistant %d: state %+v with %d tool calls", k, m.State, len(pending))
			}
			if u.Model == "gpt-5.2-codex" {
				if u.InputTokens != 0 || u.CacheCreationInputTokens+u.CacheReadInputTokens != u.TotalInputTokens {
					fail("assistant %d: OpenAI usage %+v", k, u)
				}
			} else if u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens != u.TotalInputTokens || u.InputTokens <= 0 {
				fail("assistant %d: Anthropic usage %+v", k, u)
			}
			if u.TotalInputTokens > u.MaxInputTokens || u.OutputTokens <= 0 || u.CacheCreationInputTokens < 0 {
				fail("assistant %d: usage %+v", k, u)
			}
			lastCacheRead = max(lastCacheRead, u.CacheReadInputTokens)
			if firstTotal == 0 {
				firstTotal = u.TotalInputTokens
			}
			assistant(m)
		}
	}
	if len(pending) > 0 {
		fail("conversation ends with unanswered tool calls")
	}
	if len(msgs) > 20 && lastCacheRead <= firstTotal {
		fail("cache reads do not grow (max %d, first context %d)", lastCacheRead, firstTotal)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func uuidMs(id string) int64 {
	h := strings.ReplaceAll(id[2:15], "-", "")
	var ms int64
	fmt.Sscanf(h, "%x", &ms)
	return ms
}

func TestDeterministic(t *testing.T) {
	opts := Options{Threads: 30, TotalBytes: 30 * 100e3, Seed: 42}
	g1, g2 := New(opts), New(opts)
	for i := g1.Len() - 1; i >= 0; i-- { // another order: thread i needs no other thread
		n1, d1 := g1.Thread(i)
		n2, d2 := g2.Thread(i)
		n3, d3 := g1.Thread(i)
		if n1 != n2 || n1 != n3 || !bytes.Equal(d1, d2) || !bytes.Equal(d1, d3) {
			t.Fatalf("thread %d differs between runs", i)
		}
	}
	// Concurrent use gives the same bytes.
	done := make(chan bool)
	for i := range 4 {
		go func() {
			_, d := g1.Thread(i)
			_, want := g2.Thread(i)
			done <- bytes.Equal(d, want)
		}()
	}
	for range 4 {
		if !<-done {
			t.Fatal("concurrent Thread differs")
		}
	}
	opts.Seed = 43
	g3 := New(opts)
	same := 0
	for i := range g3.Len() {
		n1, d1 := g1.Thread(i)
		n3, d3 := g3.Thread(i)
		if n1 == n3 || bytes.Equal(d1, d3) {
			same++
		}
	}
	if same > 0 {
		t.Errorf("%d threads are the same with another seed", same)
	}
	// Start moves the creation times.
	opts.Start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	if got := New(opts).Created(0); !got.Equal(opts.Start) {
		t.Errorf("Created(0) = %v, want %v", got, opts.Start)
	}
	if last := New(opts).Created(opts.Threads - 1); last.Sub(opts.Start) < Spread*9/10 || last.Sub(opts.Start) > Spread {
		t.Errorf("last thread created %v after Start, want about %v", last.Sub(opts.Start), Spread)
	}
}

// TestSizeDistribution checks the 2,000-thread, 1 GB corpus: the plan
// (every thread) and a sample of generated threads (actual size against
// plan, and what the bytes are made of).
func TestSizeDistribution(t *testing.T) {
	const n, total = 2000, 1_000_000_000
	g := New(Options{Threads: n, TotalBytes: total, Seed: 1})
	sizes := make([]int64, n)
	sum := int64(0)
	for i := range sizes {
		sizes[i] = g.TargetSize(i)
		sum += sizes[i]
	}
	slices.Sort(sizes)
	median, p99, largest := sizes[n/2], sizes[n*99/100], sizes[n-1]
	t.Logf("plan: total %d, median %d, p99 %d, max %d, min %d", sum, median, p99, largest, sizes[0])
	within(t, "planned total", float64(sum), total*0.995, total*1.005)
	within(t, "planned median", float64(median), 185e3, 225e3)
	within(t, "planned p99", float64(p99), 4e6, 5e6)
	within(t, "planned max", float64(largest), 20e6, 25e6)
	if monsters := n - sort0(sizes, 10e6); monsters < 2 || monsters > 10 {
		t.Errorf("%d threads over 10 MB, want a few", monsters)
	}
	if mid := sort0(sizes, 500e3) - sort0(sizes, 20e3); mid < n*6/10 {
		t.Errorf("only %d threads between 20 kB and 500 kB", mid)
	}

	// Generate every 16th thread (every thread with THREADGEN_FULL=1) and
	// the three largest.
	step := 16
	if os.Getenv("THREADGEN_FULL") != "" {
		step = 1
	}
	var sample []int
	for i := 0; i < n; i += step {
		sample = append(sample, i)
	}
	for i := range n {
		if g.TargetSize(i) >= sizes[n-3] && i%step != 0 {
			sample = append(sample, i)
		}
	}
	if testing.Short() {
		sample = sample[:40]
	}
	var st, stAll scanStats
	for _, i := range sample {
		_, data := g.Thread(i)
		target := g.TargetSize(i)
		if d := float64(len(data)) - float64(target); d > 0.03*float64(target)+1500 || d < -0.03*float64(target)-500 {
			t.Errorf("thread %d: %d bytes, planned %d", i, len(data), target)
		}
		s := scan(data)
		stAll.add(s)
		if i%step == 0 {
			st.add(s)
		}
	}
	t.Logf("sample of %d: %d bytes; tool results %.1f%%, in strings %.1f%% (values %.1f%%, keys %.1f%%)",
		len(sample), st.total, st.pct(st.tool), st.pct(st.keys+st.values), st.pct(st.values), st.pct(st.keys))
	t.Logf("with the 3 largest: %d bytes; tool results %.1f%%, in strings %.1f%%", stAll.total, stAll.pct(stAll.tool), stAll.pct(stAll.keys+stAll.values))
	within(t, "tool-result share %", st.pct(st.tool), 70, 78)
	within(t, "string share %", st.pct(st.keys+st.values), 84, 91)
}

// TestScales checks that the distribution keeps its shape at another mean
// and that the corpus adds up to TotalBytes.
func TestScales(t *testing.T) {
	const n, total = 300, 15_000_000
	g := New(Options{Threads: n, TotalBytes: total, Seed: 3})
	sizes := make([]int64, n)
	sum := int64(0)
	for i := range n {
		_, data := g.Thread(i)
		sizes[i] = int64(len(data))
		sum += sizes[i]
	}
	slices.Sort(sizes)
	mean := float64(total) / n
	t.Logf("total %d, median %d, p99 %d, max %d", sum, sizes[n/2], sizes[n*99/100], sizes[n-1])
	within(t, "total", float64(sum), total*0.98, total*1.03)
	within(t, "median/mean", float64(sizes[n/2])/mean, 0.34, 0.46)
	within(t, "p99/mean", float64(sizes[n*99/100])/mean, 6, 11)
}

func TestWriteDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "threads")
	g := New(Options{Threads: 12, TotalBytes: 12 * 50e3, Seed: 5})
	total, err := g.WriteDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != g.Len() {
		t.Fatalf("%d files, want %d", len(entries), g.Len())
	}
	sum := int64(0)
	for i := range g.Len() {
		name, data := g.Thread(i)
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%s differs from Thread(%d)", name, i)
		}
		fi, _ := os.Stat(filepath.Join(dir, name))
		if fi.ModTime().Before(g.Created(i)) || fi.ModTime().After(g.Created(i).Add(30*24*time.Hour)) {
			t.Errorf("%s: mtime %v, created %v", name, fi.ModTime(), g.Created(i))
		}
		sum += int64(len(got))
	}
	if sum != total {
		t.Errorf("WriteDir returned %d, files hold %d", total, sum)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			t.Errorf("left behind %s", e.Name())
		}
	}
}

func TestEscape(t *testing.T) {
	in := "a\"b\\c\nd\te\rf\bg\fh\x00i\x1bj\x7fk<>&\u2028é😀"
	got := string(appendEscaped(nil, in))
	want := `a\"b\\c\nd\te\rf\bg\fh\u0000i\u001bj` + "\x7fk<>&\u2028é😀"
	if got != want {
		t.Errorf("appendEscaped = %q, want %q", got, want)
	}
	var back string
	if err := json.Unmarshal([]byte(`"`+got+`"`), &back); err != nil || back != in {
		t.Errorf("round trip: %q, %v", back, err)
	}
}

func BenchmarkThread(b *testing.B) {
	g := New(Options{Threads: 2000, TotalBytes: 1e9, Seed: 1})
	var buf []byte
	i := 0
	for b.Loop() {
		var data []byte
		_, data, buf, _ = g.thread(i%g.Len(), buf)
		b.SetBytes(int64(len(data)))
		i += 7
	}
}

func within(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %.4g, want between %.4g and %.4g", what, got, lo, hi)
	}
}

// sort0 is the number of sorted sizes below x.
func sort0(sorted []int64, x int64) int {
	k, _ := slices.BinarySearch(sorted, x)
	return k
}

// scanStats is what a thread file's bytes are made of.
type scanStats struct {
	total, keys, values, tool int
}

func (s *scanStats) add(o scanStats) {
	s.total += o.total
	s.keys += o.keys
	s.values += o.values
	s.tool += o.tool
}

func (s *scanStats) pct(x int) float64 { return 100 * float64(x) / float64(s.total) }

// scan measures a valid JSON document: bytes inside strings (keys and
// values, between the quotes) and bytes of tool_result blocks (outermost
// ones: a subagent's conversation holds tool results too).
func scan(b []byte) scanStats {
	s := scanStats{total: len(b)}
	inTool := 0
	var value func(i int) int
	ws := func(i int) int {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == ',' || b[i] == ':') {
			i++
		}
		return i
	}
	str := func(i int) (end int) { // b[i] == '"'; returns index after the closing quote
		j := i + 1
		for {
			k := bytes.IndexByte(b[j:], '"') + j
			bs := 0
			for m := k - 1; b[m] == '\\'; m-- {
				bs++
			}
			if bs%2 == 0 {
				return k + 1
			}
			j = k + 1
		}
	}
	value = func(i int) int {
		switch b[i] {
		case '{':
			start, tool := i, false
			i = ws(i + 1)
			for b[i] != '}' {
				e := str(i)
				s.keys += e - i - 2
				key := string(b[i+1 : e-1])
				i = ws(e)
				if key == "type" && bytes.HasPrefix(b[i:], []byte(`"tool_result"`)) {
					tool = true
					inTool++
				}
				i = ws(value(i))
			}
			if tool {
				if inTool--; inTool == 0 {
					s.tool += i + 1 - start
				}
			}
			return i + 1
		case '[':
			i = ws(i + 1)
			for b[i] != ']' {
				i = ws(value(i))
			}
			return i + 1
		case '"':
			e := str(i)
			s.values += e - i - 2
			return e
		default:
			for i < len(b) && !strings.ContainsRune(",]}\n", rune(b[i])) {
				i++
			}
			return i
		}
	}
	value(0)
	return s
}

// TestSpan checks that Span spreads the creation times over its length,
// evenly (a year of use has threads in every week of it), and that the
// default is Spread with the bytes unchanged but for the times.
func TestSpan(t *testing.T) {
	const n = 14_600
	year := 365 * 24 * time.Hour
	g := New(Options{Threads: n, TotalBytes: n * 3000, Seed: 5, Span: year})
	start := g.Created(0)
	if last := g.Created(n - 1).Sub(start); last < year*99/100 || last > year {
		t.Errorf("last thread created %v after the first, want about %v", last, year)
	}
	weeks := make([]int, 53)
	for i := range n {
		c := g.Created(i)
		if c.Before(start) || i > 0 && c.Before(g.Created(i-1)) {
			t.Fatalf("thread %d created %v, out of order", i, c)
		}
		weeks[int(c.Sub(start)/(7*24*time.Hour))]++
	}
	for w, k := range weeks[:52] { // the 53rd week is one day long
		if k < 7*40*9/10 || k > 7*40*11/10 {
			t.Errorf("week %d has %d threads, want about %d (40 a day)", w, k, 7*40)
		}
	}
	// Zero is the default, four weeks: Span only moves the times.
	def := New(Options{Threads: 30, TotalBytes: 30 * 3000, Seed: 5})
	four := New(Options{Threads: 30, TotalBytes: 30 * 3000, Seed: 5, Span: Spread})
	for i := range 30 {
		_, d1 := def.Thread(i)
		_, d2 := four.Thread(i)
		if !bytes.Equal(d1, d2) {
			t.Fatalf("thread %d: Span of Spread differs from the default", i)
		}
	}
	if last := def.Created(29).Sub(def.Created(0)); last < Spread*9/10 || last > Spread {
		t.Errorf("default: last thread created %v after the first, want about %v", last, Spread)
	}
}

// TestLedgerEventsStampedByTheServer: with ClockSkew the server stamps a
// ledger thread's events with its own clock, some threads' client clocks
// being hours ahead of it: each inference event is its message's usage time less one offset
// per thread (to the second), and the corpus holds threads whose events
// are stamped more than an hour before the thread was created as well as
// threads whose are not.
func TestLedgerEventsStampedByTheServer(t *testing.T) {
	g := New(Options{Threads: 300, TotalBytes: 300 * 8e3, Seed: 11, ClockSkew: true})
	const hour = int64(time.Hour / time.Millisecond)
	early, onTime := 0, 0
	for i := range g.Len() {
		_, data := g.Thread(i)
		var th ampThread
		if err := json.Unmarshal(data, &th); err != nil {
			t.Fatalf("thread %d: %v", i, err)
		}
		if th.UsageLedger == nil {
			continue
		}
		usageMs := map[int64]int64{}
		for _, m := range th.Messages {
			if m.Usage != nil {
				ts, err := time.Parse(time.RFC3339Nano, m.Usage.Timestamp)
				if err != nil {
					t.Fatalf("thread %d: %v", i, err)
				}
				usageMs[m.MessageID] = ts.UnixMilli()
			}
		}
		offset := int64(-1)
		first := int64(math.MaxInt64)
		for _, e := range th.UsageLedger.Events {
			ts, err := time.Parse(time.RFC3339, e.Timestamp)
			if err != nil {
				t.Fatalf("thread %d: event time %q: %v", i, e.Timestamp, err)
			}
			first = min(first, ts.UnixMilli())
			if e.ToMessageID == nil {
				continue
			}
			// The event is written to the second, the offset is not.
			d := usageMs[*e.ToMessageID] - ts.UnixMilli()
			if d < 0 || offset >= 0 && (d < offset-1000 || d > offset+1000) {
				t.Fatalf("thread %d: event for message %d stamped %d ms before it, others %d", i, *e.ToMessageID, d, offset)
			}
			offset = max(offset, d)
		}
		if first < th.Created-hour {
			early++
		} else {
			onTime++
		}
	}
	if early == 0 || onTime == 0 {
		t.Errorf("ledger threads with events before their created: %d; without: %d; want both", early, onTime)
	}
}
