package report

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/amp-exporter/amp-exporter/backfill"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// fakeCount makes a cache count each thread as 100 input tokens of model
// m in one bucket.
func fakeCount(c *ServerCache) {
	c.count = func(path string, sum *thread.Summary) error {
		c.received(backfill.ThreadGrowth{Path: path, ID: sum.ID, Growth: []backfill.Growth{
			{At: 900_000, Key: store.SeriesKey{Fam: store.FamTokens, L1: "m", L2: "input"}, V: 100}}})
		return nil
	}
}

func ledgerTokens(c *ServerCache, owners *store.Owners) int64 {
	l := NewLedger()
	c.AddTo(l, owners)
	var n int64
	for _, e := range l.Entries() {
		n += e.Tokens()
	}
	return n
}

// TestServerCacheKeepsThreadsAcrossReports: what a report read is there
// for the next one, at the version it was read at; a thread the server
// dropped keeps what it counted but is no longer listed as present; a
// thread a file owns is left to the file; another format is read anew.
func TestServerCacheKeepsThreadsAcrossReports(t *testing.T) {
	path := CacheFile(t.TempDir(), "https://ampcode.com/")
	c, err := OpenServerCache(path, "s")
	if err != nil {
		t.Fatal(err)
	}
	c.UseAccount("a")
	fakeCount(c)
	v := store.FileVersion{AmpServerV: 7, AmpServerCount: 3, AmpServerLast: 42}
	for _, id := range []string{"T-a", "T-b"} {
		if !c.Apply(store.AmpServerPath(id), v, &thread.Summary{ID: id}) {
			t.Fatalf("Apply %s refused", id)
		}
	}
	c.Remove(store.AmpServerPath("T-b"))
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v, want 0600", fi.Mode().Perm())
	}

	d, err := OpenServerCache(path, "s")
	if err != nil {
		t.Fatal(err)
	}
	d.UseAccount("a")
	if rec, ok := d.File(store.AmpServerPath("T-a")); !ok || rec.Version != v {
		t.Errorf("T-a: %+v %v, want version %+v", rec, ok, v)
	}
	if _, ok := d.File(store.AmpServerPath("T-b")); ok {
		t.Error("T-b, gone from the server, is still present")
	}
	if got := d.AmpServerPaths(); len(got) != 1 || got[0] != store.AmpServerPath("T-a") {
		t.Errorf("paths %v", got)
	}
	if n := ledgerTokens(d, nil); n != 100 {
		t.Errorf("%d tokens, want 100 (a thread gone from the server is left out, as without a cache)", n)
	}
	owners := store.NewOwners()
	owners.Claim("T-a", store.SourceThreads)
	if n := ledgerTokens(d, owners); n != 0 {
		t.Errorf("%d tokens with T-a a file's, want 0", n)
	}

	if err := os.WriteFile(path, []byte("not gzip"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := OpenServerCache(path, "s")
	if err == nil {
		t.Error("a damaged cache gives no error to log")
	}
	if cached, _ := e.Threads(); cached != 0 {
		t.Errorf("a damaged cache gives %d threads", cached)
	}
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
}

// TestServerCacheRefusesEveryFlippedBit: a cache damaged by one flipped
// bit anywhere is either refused (the report reads the threads anew) or
// loads exactly what was saved: gzip's checksum, at the end of the
// stream, must be read.
func TestServerCacheRefusesEveryFlippedBit(t *testing.T) {
	path := CacheFile(t.TempDir(), "https://ampcode.com/")
	c, err := OpenServerCache(path, "s")
	if err != nil {
		t.Fatal(err)
	}
	c.UseAccount("a")
	fakeCount(c)
	for i, id := range []string{"T-a", "T-b", "T-c"} {
		v := store.FileVersion{AmpServerV: int64(i + 1), AmpServerCount: 3, AmpServerLast: 42}
		if !c.Apply(store.AmpServerPath(id), v, &thread.Summary{ID: id}) {
			t.Fatalf("Apply %s refused", id)
		}
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := OpenServerCache(path, "s")
	if err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(t.TempDir(), "damaged.json.gz")
	var refused, same int
	for i := range good {
		for b := 0; b < 8; b++ {
			bad := append([]byte(nil), good...)
			bad[i] ^= 1 << b
			// A new file each time: ext4 flushes a file truncated and
			// written again as it is closed, a disk wait per flip.
			_ = os.Remove(damaged)
			if err := os.WriteFile(damaged, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := OpenServerCache(damaged, "s")
			if err != nil {
				if got.UseAccount("a"); len(got.accounts) != 0 || len(got.threads) != 0 {
					t.Fatalf("byte %d bit %d: refused, yet threads kept", i, b)
				}
				refused++
				continue
			}
			if !reflect.DeepEqual(got.accounts, want.accounts) {
				t.Errorf("byte %d bit %d: loaded other content and no error", i, b)
				continue
			}
			same++
		}
	}
	t.Logf("%d bytes: %d flips refused, %d loaded the same content", len(good), refused, same)
}

// TestServerCacheRefusesTrailingData: a value followed by more is damage.
func TestServerCacheRefusesTrailingData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(`{"format":1,"threads":[]}` + "\n" + `{"format":1}`))
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenServerCache(path, "s"); err == nil {
		t.Error("a cache with data after its value gives no error")
	}
}

// TestServerCacheKeepsCommits: a server thread's commits and pull
// requests are kept in the cache with its spending, so that the next
// report counts them without reading the thread again.
func TestServerCacheKeepsCommits(t *testing.T) {
	path := CacheFile(t.TempDir(), "https://ampcode.com/")
	c, err := OpenServerCache(path, "s")
	if err != nil {
		t.Fatal(err)
	}
	c.UseAccount("a")
	c.count = func(path string, sum *thread.Summary) error {
		c.received(backfill.ThreadGrowth{Path: path, ID: sum.ID, Growth: []backfill.Growth{
			{At: 900_000, Key: store.SeriesKey{Fam: store.FamTokens, L1: "m", L2: "input"}, V: 100},
			{At: 900_000, Key: store.SeriesKey{Fam: store.FamCommits, Repo: "github.com/acme/web"}, V: 3},
			{At: 900_000, Key: store.SeriesKey{Fam: store.FamPullRequests, Repo: "github.com/acme/web"}, V: 1}}})
		return nil
	}
	if !c.Apply(store.AmpServerPath("T-a"), store.FileVersion{AmpServerV: 7, AmpServerCount: 3}, &thread.Summary{ID: "T-a"}) {
		t.Fatal("Apply refused")
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	d, err := OpenServerCache(path, "s")
	if err != nil {
		t.Fatal(err)
	}
	d.UseAccount("a")
	l := NewLedger()
	d.AddTo(l, nil)
	var commits, prs int64
	for _, e := range l.Entries() {
		commits, prs = commits+e.Commits, prs+e.PullRequests
	}
	if commits != 3 || prs != 1 {
		t.Errorf("%d commits, %d pull requests after the cache's round trip; want 3, 1", commits, prs)
	}
}
