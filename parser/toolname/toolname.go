// Package toolname maps the tool names Amp writes, across its eras and
// sources, to one canonical spelling, so that a tool has one label value
// whether it came from a thread file or a stream-json run.
package toolname

import "strings"

// Unknown names a tool result whose tool_use could not be found.
const Unknown = "unknown"

// Bash is the shell tool, whichever spelling ran it (Bash, shell_command).
const Bash = "Bash"

var canonical = map[string]string{
	"Bash":          "Bash",
	"shell_command": "Bash",
	"edit_file":     "Edit",
	"create_file":   "Write",
	"glob":          "Glob",
	"read_web_page": "WebFetch",
	"todo_write":    "TodoWrite",
	"todo_read":     "TodoRead",
}

// Normalize returns the canonical name of an Amp tool. Legacy and modern
// spellings map to the Claude-canonical names (docs/formats/amp-threads.md
// §1.10, docs/counting.md rule 10); MCP tools are
// bucketed by server (mcp__<server>__<tool> → mcp__<server>) and toolbox
// tools into "tb", because those names are open-ended; every other name is
// returned unchanged.
func Normalize(name string) string {
	if c, ok := canonical[name]; ok {
		return c
	}
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		if i := strings.Index(rest, "__"); i > 0 {
			return "mcp__" + rest[:i]
		}
		return name
	}
	if strings.HasPrefix(name, "tb__") {
		return "tb"
	}
	if name == "" {
		return Unknown
	}
	return name
}
