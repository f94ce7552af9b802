package pricing

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

func TestSpeedMultiplier(t *testing.T) {
	tab, err := EmbeddedSpeeds()
	if err != nil {
		t.Fatal(err)
	}
	if tab.Source != "@ampcode/cli" || tab.Version == "" {
		t.Errorf("source %q version %q: the table does not say which CLI it is from", tab.Source, tab.Version)
	}
	for _, c := range []struct {
		model string
		asked Speed
		mult  float64
		as    Speed
	}{
		{"claude-opus-4-6", Standard, 1, Standard},
		{"claude-opus-4-6", Fast, 6, Fast},
		{"claude-opus-4-7", Fast, 6, Fast},
		{"claude-opus-4-8", Fast, 2, Fast},
		// Plaid is fast on a model without a plaid price.
		{"claude-opus-4-6", Plaid, 6, Fast},
		{"anthropic/claude-opus-4-6", Fast, 6, Fast},
		{"gpt-5.2", Fast, 2.5, Fast},
		{"gpt-5-2025-08-07", Fast, 2.5, Fast}, // a dated name, as the CLI reads it
		{"gpt-6-astra", Fast, 2, Fast},
		{"gpt-6-astra", Plaid, 20, Plaid},
		{"gpt-6-sol", Plaid, 2, Fast},
		{"zai-org/GLM-5.2-Fast", Fast, 1.5, Fast},
		// No fast price: standard, whatever was asked.
		{"claude-opus-4-5-20251101", Fast, 1, Standard},
		{"claude-haiku-4-5-20251001", Plaid, 1, Standard},
		{"gpt-5.2-codex", Fast, 1, Standard},
		{"", Fast, 1, Standard},
		{"other", Plaid, 1, Standard},
	} {
		mult, as := tab.Multiplier(c.model, c.asked)
		if mult != c.mult || as != c.as {
			t.Errorf("%s at %s: ×%v as %s, want ×%v as %s", c.model, c.asked, mult, as, c.mult, c.as)
		}
	}
	var none *SpeedTable
	if mult, as := none.Multiplier("claude-opus-4-6", Fast); mult != 1 || as != Standard {
		t.Errorf("no table: ×%v as %s", mult, as)
	}
}

func TestPriceScale(t *testing.T) {
	long := MakePrice(ptr(10), ptr(37.5), nil, nil)
	p := MakePrice(ptr(5), ptr(25), ptr(0.5), nil)
	p.Long = &long
	q := p.Scale(6)
	if q.Input != 30 || q.Output != 150 || q.CacheRead != 3 || !q.HasCacheRead || q.HasCacheWrite {
		t.Errorf("scaled %+v", q)
	}
	if q.Long == nil || q.Long.Input != 60 || q.Long.Output != 225 || p.Long.Input != 10 {
		t.Errorf("long tier %+v (the original's %+v)", q.Long, p.Long)
	}
	if p.Scale(1) != p {
		t.Error("×1 changed the price")
	}
}

func ptr(v float64) *float64 { return &v }

// The checked-in tables are what gen/amp-cli.cjs extracts from the pinned
// Amp CLI (scripts/test-deps.sh fetches it): a new CLI, or a change of
// the script, regenerates them (go generate ./pricing). Where no CLI
// build is fetched (another platform) the test skips; on linux/amd64 in
// CI it fails instead, as the stand-in's conformance test does.
func TestSpeedTableMatchesTheCLI(t *testing.T) {
	cli := ampCLI(t)
	for what, file := range map[string]string{"speeds": "amp-speeds.json", "modes": filepath.Join("..", "parser", "agentmode", "modes.json")} {
		out, err := exec.Command("node", filepath.Join("gen", "amp-cli.cjs"), what, cli).Output()
		if err != nil {
			t.Fatalf("node gen/amp-cli.cjs %s: %v", what, err)
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, want) {
			t.Errorf("%s is not what gen/amp-cli.cjs extracts from the CLI: run go generate ./pricing", file)
		}
	}
}

// ampCLIVersion is the Amp CLI that scripts/test-deps.sh fetches.
const ampCLIVersion = "0.0.1790142911-g7618fb"

func ampCLI(t *testing.T) string {
	t.Helper()
	p := os.Getenv("AMP_CLI")
	if p == "" {
		p = filepath.Join("..", ".cache", "amp-cli", ampCLIVersion, "amp")
	}
	_, statErr := os.Stat(p)
	_, nodeErr := exec.LookPath("node")
	if statErr == nil && nodeErr == nil {
		abs, _ := filepath.Abs(p)
		return abs
	}
	msg := fmt.Sprintf("the Amp CLI %s at %s (%v) and node (%v) are needed: run `bash scripts/test-deps.sh amp-cli-path` (or set AMP_CLI)", ampCLIVersion, p, statErr, nodeErr)
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" && os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
