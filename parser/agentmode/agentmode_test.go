package agentmode

import "testing"

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"rush", "low"},
		{"smart", "medium"},
		{"deep", "medium"},
		{"large", "medium"},
		{"low", "low"},
		{"medium", "medium"},
		{"high", "high"},
		{"ultra", "ultra"},
		{"review", "review"},
		{"puck", "puck"},
		{"free", "free"}, // not a CLI mode: as it is
		{"Smart", "Smart"},
		{"", ""},
	} {
		if got := Canonical(c.in); got != c.want {
			t.Errorf("Canonical(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTableIsTheCLIs(t *testing.T) {
	tab := Embedded()
	if tab.Source != "@ampcode/cli" || tab.Version == "" {
		t.Errorf("source %q version %q", tab.Source, tab.Version)
	}
	modes := map[string]bool{}
	for _, m := range tab.Modes {
		modes[m] = true
	}
	for _, m := range []string{"low", "medium", "high", "ultra", "review", "puck"} {
		if !modes[m] {
			t.Errorf("mode %q missing from %v", m, tab.Modes)
		}
	}
	for old, m := range tab.Aliases {
		if !modes[m] || modes[old] {
			t.Errorf("alias %s → %s: not an old name of a current mode", old, m)
		}
	}
}
