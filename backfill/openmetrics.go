package backfill

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/amp-exporter/amp-exporter/store"
)

// metric is how the live exporter names a store family: the metric's
// name (without _total), HELP, and the names of the store key's labels
// after source ("" for a part the family does not use).
type metric struct {
	name, help string
	l1, l2     string
}

// metrics are the names the live collector gives the backfilled families.
var metrics = map[store.Family]metric{
	store.FamMessages: {"amp_messages", "Amp messages seen, by role (user, assistant).", "role", ""},
	store.FamPrompts:  {"amp_prompts", "Amp user messages that are prompts (not tool-result carriers).", "", ""},
	store.FamTokens:   {"amp_tokens", "Amp tokens by model and type.", "model", "token_type"},
	store.FamCredits:  {"amp_credits", "Amp credits charged, where the files carry them.", "model", ""},
	store.FamCost: {"amp_cost_usd", "Estimated spend in US dollars: tokens times list prices. An estimate, not a bill.",
		"model", ""},
	store.FamUnpriced: {"amp_unpriced_tokens", "Tokens of models the price table does not know.", "model", ""},
	store.FamFinished: {"amp_assistant_messages", "Finished Amp model turns by stop reason.", "model", "stop_reason"},
	store.FamToolCalls: {"amp_tool_calls", "Amp tool results that reached a terminal status, by normalized tool name.",
		"tool", "status"},
	store.FamLines: {"amp_lines_changed", "Lines Amp's edit tools added and removed (kind), counted from each done tool call's input as Amp's UI counts them.",
		"kind", "tool"},
	store.FamLinesByModel: {"amp_lines_changed_by_model", "The lines of amp_lines_changed_total by the model of the assistant message that made the edit call.",
		"kind", "model"},
	store.FamShellCommands: {"amp_shell_commands", "Shell commands Amp ran (Bash, shell_command), by outcome: success, failure, stopped.",
		"outcome", ""},
	store.FamCommits: {"amp_commits", "New commits Amp's shell commands made (a git commit of a call that exited 0 and printed git's header for a new commit).",
		"", ""},
	store.FamPullRequests: {"amp_pull_requests", "Pull and merge requests Amp's shell commands opened (gh pr create, glab mr create, hub pull-request).",
		"", ""},
	store.FamPushes: {"amp_pushes", "git push commands Amp's shell commands ran, by outcome: success, failure.",
		"outcome", ""},
	store.FamCommitsByModel: {"amp_commits_by_model", "The commits of amp_commits_total by the model of the assistant message that made the shell call.",
		"model", ""},
	store.FamPullRequestsByModel: {"amp_pull_requests_by_model", "The pull requests of amp_pull_requests_total by the model of the assistant message that made the shell call.",
		"model", ""},
}

// MetricName is the name of the series a family is written as (with
// _total).
func MetricName(f store.Family) string { return metrics[f].name + "_total" }

// Label is a name and a value.
type Label struct{ Name, Value string }

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ParseLabels reads NAME=VALUE target labels (--label), sorted by name.
// The names the metrics carry themselves, and names starting with __, are
// refused: they would replace the series' own labels.
func ParseLabels(pairs []string) ([]Label, error) {
	own := map[string]bool{"source": true, "le": true, store.RepositoryLabel: true}
	for _, m := range metrics {
		own[m.l1], own[m.l2] = true, true
	}
	var out []Label
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok || !labelName.MatchString(name) || strings.HasPrefix(name, "__") {
			return nil, fmt.Errorf("label %q: want NAME=VALUE with a Prometheus label name", p)
		}
		if own[name] {
			return nil, fmt.Errorf("label %q: the metrics carry %s themselves", p, name)
		}
		if slices.ContainsFunc(out, func(l Label) bool { return l.Name == name }) {
			return nil, fmt.Errorf("label %q: %s given twice", p, name)
		}
		out = append(out, Label{name, value})
	}
	slices.SortFunc(out, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Labels returns a series' labels (without __name__): the target labels,
// source, and the family's own (the repository for the families that carry
// it, as live), sorted by name. Empty values are left out, as Prometheus
// drops them and the live exporter does not render them.
func Labels(id SeriesID, target []Label) []Label {
	m := metrics[id.Key.Fam]
	ls := append([]Label(nil), target...)
	ls = append(ls, Label{"source", id.Source})
	if m.l1 != "" {
		ls = append(ls, Label{m.l1, id.Key.L1})
	}
	if m.l2 != "" {
		ls = append(ls, Label{m.l2, id.Key.L2})
	}
	if store.RepositoryFamily(id.Key.Fam) {
		ls = append(ls, Label{store.RepositoryLabel, id.Key.Repo})
	}
	ls = slices.DeleteFunc(ls, func(l Label) bool { return l.Value == "" })
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

// Value is a sample's value as the live collector exposes it.
func Value(f store.Family, v int64) float64 { return store.Unfixed(f, v) }

// WriteOpenMetrics writes series (from Series) and the workspace's
// (WorkspaceHistory.Series) as OpenMetrics text with a timestamp on every
// sample, family by family, ending with # EOF: the input of promtool tsdb
// create-blocks-from openmetrics. It returns the number of samples
// written.
func WriteOpenMetrics(w io.Writer, series []Series, target []Label, workspace ...WorkspaceSeries) (int64, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	var n int64
	var fam store.Family
	var line []byte
	head := 0
	for i := range series {
		s := &series[i]
		if i == 0 || s.ID.Key.Fam != fam {
			fam = s.ID.Key.Fam
			m := metrics[fam]
			fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s counter\n", m.name, escapeHelp(m.help), m.name)
		}
		prefix := appendSeries(nil, metrics[fam].name+"_total", Labels(s.ID, target))
		prefix = append(prefix, ' ')
		// Most samples repeat the one before (no usage in that step): the
		// line up to the timestamp is kept and reused.
		last := int64(-1)
		for p := range s.Points() {
			if p.V != last {
				line = append(line[:0], prefix...)
				line = strconv.AppendFloat(line, Value(fam, p.V), 'g', -1, 64)
				line = append(line, ' ')
				head, last = len(line), p.V
			}
			line = line[:head]
			line = appendSeconds(line, p.T)
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return n, fmt.Errorf("writing openmetrics: %w", err)
			}
			n++
		}
	}
	m, err := writeWorkspace(bw, workspace, target)
	n += m
	if err != nil {
		return n, err
	}
	if _, err := bw.WriteString("# EOF\n"); err != nil {
		return n, fmt.Errorf("writing openmetrics: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("writing openmetrics: %w", err)
	}
	return n, nil
}

// appendSeries appends name{labels}.
func appendSeries(b []byte, name string, ls []Label) []byte {
	b = append(b, name...)
	if len(ls) == 0 {
		return b
	}
	b = append(b, '{')
	for i, l := range ls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l.Name...)
		b = append(b, '=', '"')
		b = appendEscaped(b, l.Value)
		b = append(b, '"')
	}
	return append(b, '}')
}

// appendEscaped escapes a label value: backslash, double quote, newline.
func appendEscaped(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}

// appendSeconds appends epoch ms as seconds with up to three decimals.
func appendSeconds(b []byte, ms int64) []byte {
	b = strconv.AppendInt(b, ms/1000, 10)
	if r := ms % 1000; r != 0 {
		if r < 0 {
			r = -r
		}
		b = append(b, '.')
		b = append(b, byte('0'+r/100), byte('0'+r/10%10), byte('0'+r%10))
	}
	return b
}
