package toolname

import "testing"

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Bash", "Bash"},
		{"shell_command", "Bash"},
		{"edit_file", "Edit"},
		{"create_file", "Write"},
		{"glob", "Glob"},
		{"read_web_page", "WebFetch"},
		{"todo_write", "TodoWrite"},
		{"todo_read", "TodoRead"},
		{"Read", "Read"},
		{"Grep", "Grep"},
		{"web_search", "web_search"},
		{"painter", "painter"},
		{"mcp__github__create_issue", "mcp__github"},
		{"mcp__my_server__do__thing", "mcp__my_server"},
		{"mcp__lonely", "mcp__lonely"},
		{"tb__deploy", "tb"},
		{"invalid_tool", "invalid_tool"},
		{"", "unknown"},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
