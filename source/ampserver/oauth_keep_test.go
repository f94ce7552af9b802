package ampserver

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/store"
)

// Where secrets.json cannot be replaced (the rename fails: EBUSY on a
// bind-mounted file), the refreshed login is written in place: the same
// file, its other entries, owner and mode kept, and the CLI's next
// refresh works with the refresh token stored.
func TestOAuthRefreshWrittenInPlaceWhenTheFileCannotBeReplaced(t *testing.T) {
	e := newOAuthEnv(t, 5*time.Minute)
	rename = func(string, string) error { return &os.LinkError{Op: "rename", Err: syscall.EBUSY} }
	t.Cleanup(func() { rename = os.Rename })
	k := e.mustKey(true)
	before, rtBefore := e.stored()
	fiBefore, err := os.Stat(e.secrets)
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(3*time.Minute + time.Second)
	got, err := k.APIKey(context.Background())
	if err != nil || got == before {
		t.Fatalf("refresh: %v (new token: %v)", err, got != before)
	}
	if access, refresh := e.stored(); access != got || refresh == rtBefore {
		t.Fatal("the refreshed login is not in secrets.json")
	}
	if fi, err := os.Stat(e.secrets); err != nil || !os.SameFile(fi, fiBefore) {
		t.Fatalf("secrets.json is not the same file: %v", err)
	}
	if n := e.refreshes(RefreshStored); n != 1 {
		t.Fatalf("%d refreshes counted as stored", n)
	}
	e.checkFile()
	e.clk.Advance(3*time.Minute + time.Second)
	if out := cliRefresh(e.secrets, e.cliURL, e.clk.Now); out != "refreshed" {
		t.Fatalf("the CLI after the exporter's refresh: %s", out)
	}
	e.noTokensLogged()
}

// A refreshed login that cannot be stored at all (after the check passed,
// both the replace and the write in place fail) is not dropped: the
// exporter uses it from memory, says so in one line, does not refresh
// again for it, and writes it once secrets.json can take it, so the
// CLI's login lives on.
func TestOAuthRefreshKeptInMemoryWhenItCannotBeStored(t *testing.T) {
	e := newOAuthEnv(t, 5*time.Minute)
	var issued atomic.Bool // the issuer answered: from now on nothing can be written
	e.o.OnAuthenticate(func() { issued.Store(true) })
	var broken atomic.Bool
	broken.Store(true)
	refuse := func() bool { return issued.Load() && broken.Load() }
	rename = func(from, to string) error {
		if refuse() {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EBUSY}
		}
		return os.Rename(from, to)
	}
	openFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		if flag&(os.O_WRONLY|os.O_RDWR) != 0 && refuse() {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EIO}
		}
		return os.OpenFile(name, flag, perm)
	}
	t.Cleanup(func() { rename, openFile = os.Rename, os.OpenFile })
	k := e.mustKey(true)
	before, rtBefore := e.stored()
	e.clk.Advance(3*time.Minute + time.Second)
	got, err := k.APIKey(context.Background())
	if err != nil || got == before {
		t.Fatalf("the refreshed login was dropped: %v (new token: %v)", err, got != before)
	}
	if access, refresh := e.stored(); access != before || refresh != rtBefore {
		t.Fatal("secrets.json changed though it could not be written")
	}
	// Used from memory, not refreshed again, the failure said once.
	e.clk.Advance(10 * time.Second)
	for i := 0; i < 3; i++ {
		if again, err := k.APIKey(context.Background()); err != nil || again != got {
			t.Fatalf("call %d: %v (the kept token: %v)", i, err, again == got)
		}
	}
	if rot, req, _ := e.o.Stats(); rot != 1 || req != 1 {
		t.Fatalf("%d rotations in %d requests, want 1 in 1", rot, req)
	}
	if n := strings.Count(e.log.String(), "cannot write it to secrets.json"); n != 1 {
		t.Fatalf("%d lines about the login kept in memory, want 1:\n%s", n, e.log)
	}
	if n := e.refreshes(RefreshKeptInMemory); n != 1 {
		t.Fatalf("%d refreshes counted as kept in memory", n)
	}
	// secrets.json can be written again: the kept login is written at
	// the next try, and the CLI refreshes with it.
	broken.Store(false)
	e.clk.Advance(30 * time.Second)
	if again, err := k.APIKey(context.Background()); err != nil || again != got {
		t.Fatalf("after the pause: %v", err)
	}
	if access, refresh := e.stored(); access != got || refresh == rtBefore {
		t.Fatal("the kept login was not written once secrets.json could take it")
	}
	e.checkFile()
	e.clk.Advance(3 * time.Minute)
	if out := cliRefresh(e.secrets, e.cliURL, e.clk.Now); out != "refreshed" {
		t.Fatalf("the CLI: %s", out)
	}
	e.noTokensLogged()
}

// A CLI process that read secrets.json before the exporter's refresh and
// writes it after (its read-modify-write of another entry) puts back the
// refresh token the exporter has just spent. The exporter holds the live
// login the issuer answered: it writes it back at its next use, keeping
// the CLI's entry, instead of sending the spent token and giving the
// login up as gone.
func TestOAuthSpentRefreshTokenPutBackByTheCLI(t *testing.T) {
	e := newOAuthEnv(t, 5*time.Minute)
	const other = "apiKey@https://other.example/"
	k := e.mustKey(true)
	stale, err := os.ReadFile(e.secrets) // the CLI process reads...
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(3*time.Minute + time.Second)
	live, err := k.APIKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, rtLive := e.stored()
	// ...and writes its change over the exporter's refresh.
	var m map[string]any
	if err := json.Unmarshal(stale, &m); err != nil {
		t.Fatal(err)
	}
	m[other] = "sgamp_written_meanwhile"
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(e.secrets, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := k.APIKey(context.Background())
	if err != nil || got != live {
		t.Fatalf("after the spent token was put back: %v (the live token: %v)", err, got == live)
	}
	if access, refresh := e.stored(); access != live || refresh != rtLive {
		t.Fatal("the live login was not written back")
	}
	if v, _ := e.file()[other].(string); v != "sgamp_written_meanwhile" {
		t.Fatalf("the CLI's entry is %q", v)
	}
	if !strings.Contains(e.log.String(), "wrote back the live login") {
		t.Errorf("no line says the login was written back:\n%s", e.log)
	}
	// Both go on refreshing it.
	e.clk.Advance(3*time.Minute + time.Second)
	if _, err := k.APIKey(context.Background()); err != nil {
		t.Fatalf("the exporter's next refresh: %v", err)
	}
	e.clk.Advance(3*time.Minute + time.Second)
	if out := cliRefresh(e.secrets, e.cliURL, e.clk.Now); out != "refreshed" {
		t.Fatalf("the CLI: %s", out)
	}
	if _, _, refused := e.o.Stats(); refused != 0 {
		t.Fatalf("%d refresh tokens refused", refused)
	}
	e.noTokensLogged()
}

// A login written back is not forced over a newer one: after `amp login`
// (a refresh token the exporter never spent), the new login wins and the
// one the exporter held is forgotten.
func TestOAuthHeldLoginYieldsToANewerOne(t *testing.T) {
	e := newOAuthEnv(t, 5*time.Minute)
	k := e.mustKey(true)
	e.clk.Advance(3*time.Minute + time.Second)
	held, err := k.APIKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	access, refresh := e.o.Login()
	m := e.file()
	m["apiKey@"+e.cliURL], m["oauth-refresh-token@"+e.cliURL] = access, refresh
	b, _ := json.Marshal(m)
	if err := os.WriteFile(e.secrets, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := k.APIKey(context.Background()); err != nil || got != access || got == held {
		t.Fatalf("after amp login: %v (the new login: %v)", err, got == access)
	}
	if a, r := e.stored(); a != access || r != refresh {
		t.Fatal("the new login was overwritten")
	}
}

// A refresh answered with a token for another account (another sub) is
// refused before it is stored or used: one line, counted, the stored
// login kept and used while it is valid, and the refresh not repeated at
// every request.
func TestOAuthRefreshForAnotherAccountRefused(t *testing.T) {
	e := newOAuthEnv(t, 5*time.Minute)
	k := e.mustKey(true)
	before, rtBefore := e.stored()
	e.o.SetSubject("user-2")
	e.clk.Advance(3*time.Minute + time.Second)
	for i := 0; i < 3; i++ {
		got, err := k.APIKey(context.Background())
		if err != nil || got != before {
			t.Fatalf("call %d: %v (another account's token used: %v)", i, err, got != before)
		}
	}
	if rot, req, _ := e.o.Stats(); rot != 1 || req != 1 {
		t.Fatalf("%d rotations in %d requests, want 1 in 1", rot, req)
	}
	if access, refresh := e.stored(); access != before || refresh != rtBefore {
		t.Fatal("another account's login was stored")
	}
	log := e.log.String()
	if n := strings.Count(log, "another account"); n != 1 {
		t.Fatalf("%d lines about another account, want 1:\n%s", n, log)
	}
	if strings.Contains(log, "user-2") || strings.Contains(log, "user-1") {
		t.Fatalf("an account id was logged:\n%s", log)
	}
	if e.refreshes(RefreshOtherAccount) != 1 || e.refreshes(RefreshStored) != 0 {
		t.Fatalf("refreshes counted: %v", e.outcomes)
	}
	e.checkFile()
	e.noTokensLogged()
}

// The sync after a login found gone tries again at its interval, not
// after AuthRetry: nothing is sent for a gone login, and a login stored
// meanwhile (`amp login`, or another process writing back a live one) is
// followed a minute later, not five.
func TestRunFollowsANewLoginAtTheInterval(t *testing.T) {
	e := newOAuthEnv(t, time.Minute)
	e.putThreads(2, 20_000)
	k := e.mustKey(true)
	c, err := NewClient(Options{URL: e.o.URL + "/", Keys: k, Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	owners := store.NewOwners()
	st := store.NewThreadStore(store.StoreOptions{Now: e.clk.Now})
	st.SetClaim(owners, store.SourceAmpServer)
	waits := timerClock{Fake: e.clk, waits: make(chan time.Duration, 4)}
	syncer := NewSyncer(c, SyncConfig{Interval: time.Minute, AuthRetry: 5 * time.Minute, FullInterval: time.Hour, IncludeArchived: true,
		MaxConcurrency: 2, MaxThreadBytes: 64 << 20}, st, SyncOptions{Owners: owners, Logger: e.logger(), Clock: waits})
	m := &sourceMetrics{upCh: make(chan bool, 16)}
	syncer.source = m
	e.o.Revoke()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := make(chan struct{})
	close(start)
	go func() { done <- syncer.Run(ctx, start) }()
	defer func() { cancel(); <-done }()
	if ok := <-m.upCh; ok {
		t.Fatal("up with a login that is gone")
	}
	if wait := <-waits.waits; wait != time.Minute {
		t.Fatalf("the next try after the login was found gone waits %v, want the interval (1m)", wait)
	}
	access, refresh := e.o.Login() // amp login
	f := e.file()
	f["apiKey@"+e.cliURL], f["oauth-refresh-token@"+e.cliURL] = access, refresh
	b, _ := json.Marshal(f)
	if err := os.WriteFile(e.secrets, b, 0o600); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Minute)
	if ok := <-m.upCh; !ok {
		t.Fatal("the sync after amp login failed")
	}
	if _, _, refused := e.o.Stats(); refused != 1 {
		t.Fatalf("%d refresh tokens refused, want 1 (the gone login's is not sent again)", refused)
	}
}

// timerClock tells the waits of the timers it makes.
type timerClock struct {
	*clock.Fake
	waits chan time.Duration
}

func (c timerClock) NewTimer(d time.Duration) clock.Timer {
	t := c.Fake.NewTimer(d)
	c.waits <- d
	return t
}
