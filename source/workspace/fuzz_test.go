package workspace

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/amp-exporter/amp-exporter/store"
)

// FuzzLoadState: whatever the state file holds, loading it fails or
// gives a state the store takes, counts on and gives back, without a
// panic.
func FuzzLoadState(f *testing.F) {
	f.Add([]byte(`{"version":1,"state":{"last_day":"2026-08-12","t":[{"i":"T-1","u":1,"w":"u","r":"github.com/a/b","c":1.5,"m":[{"n":"m","k":[1,2,3,4],"c":1.5}]}],"d":[{"Day":"2026-08-12","User":"u","Model":"m","USD":1}],"tokens":[{"L1":"m","L2":"input","N":3}],"ledger":[{"start":0,"session":"u","model":"m","input":1}]}}`))
	f.Add([]byte(`{"version":1,"state":{"t":[{"i":"","m":[{"n":"","k":[18446744073709551615,0,0,0],"c":-1}]}]}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(data)
		_ = zw.Close()
		if err := os.WriteFile(filepath.Join(dir, StateName), b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		st, ok, err := LoadState(dir)
		if err != nil || !ok {
			return
		}
		s := store.NewWorkspaceStore(nil, store.NewRepositories(nil))
		s.Import(st)
		s.ApplyUsage(store.WorkspaceUsage{ID: "T-1", User: "u", USD: 2, Models: []store.WorkspaceModel{{Model: "m", Tokens: [4]uint64{5, 5, 5, 5}, USD: 2}}})
		s.ApplyDay(store.WorkspaceDay{Day: "2026-08-12", User: "u", Models: map[string]float64{"m": 2}})
		_ = s.Snapshot()
		_ = s.Ledger()
		if _, err := SaveState(dir, s.Export()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadState(dir); err != nil {
			t.Fatalf("a state saved cannot be loaded: %v", err)
		}
	})
}
