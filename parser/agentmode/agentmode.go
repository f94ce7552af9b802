// Package agentmode names an Amp agent mode the way the Amp CLI does:
// the CLI renamed its modes (low, medium, high, ultra, review, puck) and
// reads the old names as aliases of the new (rush → low; smart, deep,
// large → medium), so a thread's agentMode, old or new, is one mode. The
// table is the CLI's own, generated from its bundle (pricing/gen/amp-cli.sh).
package agentmode

import (
	_ "embed"
	"encoding/json"
	"sync"
)

//go:embed modes.json
var embedded []byte

// Table is the CLI's agent modes and aliases.
type Table struct {
	Source  string            `json:"source"`
	Version string            `json:"version"`
	Modes   []string          `json:"modes"`
	Aliases map[string]string `json:"aliases"`
}

// table is decoded once; a table that does not decode (it is checked in
// and tested) maps nothing.
var table = sync.OnceValue(func() *Table {
	var t Table
	if err := json.Unmarshal(embedded, &t); err != nil {
		return &Table{}
	}
	return &t
})

// Embedded returns the table compiled into the binary.
func Embedded() *Table { return table() }

// Canonical returns the mode an agentMode value names: an old name's new
// one, any other value (a current mode, a plugin's mode, "") as it is.
func Canonical(mode string) string {
	if m, ok := table().Aliases[mode]; ok {
		return m
	}
	return mode
}
