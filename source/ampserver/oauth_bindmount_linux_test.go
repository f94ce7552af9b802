//go:build linux

package ampserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountNSChild is set in the helper process that runs a test in a
// private mount namespace.
const mountNSChild = "AMP_EXPORTER_TEST_MOUNTNS"

// inPrivateMountNamespace runs the calling test again in a helper process
// and returns false; in that process it moves the test's thread into a
// private mount namespace (mounts made there are seen by this thread
// only, and end with it) and returns true. It needs root: CI runs the
// tests as root, so there a test that cannot run fails.
func inPrivateMountNamespace(t *testing.T) bool {
	t.Helper()
	if os.Getenv(mountNSChild) == "" {
		if os.Geteuid() != 0 {
			if os.Getenv("CI") == "true" {
				t.Fatal("this test needs root (a private mount namespace and a bind mount), and CI runs the tests as root")
			}
			t.Skip("needs root for a private mount namespace and a bind mount (CI runs it as root)")
		}
		args := []string{os.Args[0], "-test.run=^" + t.Name() + "$", "-test.count=1", "-test.v"}
		if wrapper := os.Getenv("AMP_TEST_EXEC"); wrapper != "" {
			// Under an emulator (make test-arm64) the child runs under it too.
			args = append([]string{wrapper}, args...)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), mountNSChild+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in a private mount namespace:\n%s", out)
		if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
			t.Fatalf("the test in a private mount namespace did not pass: %v", err)
		}
		return false
	}
	// Never unlocked: when the test's goroutine ends, so do the thread
	// and its namespace.
	runtime.LockOSThread()
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf("making the mounts private: %v", err)
	}
	return true
}

// A secrets.json bind-mounted from the host, as a container's
// `-v ~/.local/share/amp/secrets.json:…` or a Kubernetes subPath makes
// it: it cannot be replaced (the rename fails with EBUSY), though a file
// can be made beside it. The refreshed login is written in place — the
// same file under the mount, its other entries, owner and mode kept —
// and the CLI's next refresh works. (It was dropped after the issuer had
// rotated the refresh token: the CLI's next refresh got invalid_grant.)
func TestOAuthRefreshOfABindMountedSecretsFile(t *testing.T) {
	if !inPrivateMountNamespace(t) {
		return
	}
	e := newOAuthEnv(t, 5*time.Minute)
	// The host's file, owned by the CLI's user (not the exporter's: root),
	// mounted where the exporter looks (e.secrets, in the container).
	hostPath := filepath.Join(t.TempDir(), "secrets.json")
	b, err := os.ReadFile(e.secrets)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hostPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(hostPath, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(hostPath, e.secrets, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(e.secrets, 0) })
	// The mount is what a container has: replacing the file fails.
	probe := filepath.Join(filepath.Dir(e.secrets), "probe")
	if err := os.WriteFile(probe, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(probe, e.secrets); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("rename over the bind-mounted file: %v, want EBUSY", err)
	}
	if err := os.Remove(probe); err != nil {
		t.Fatal(err)
	}

	k := e.mustKey(true)
	before, rtBefore := e.stored()
	e.clk.Advance(3*time.Minute + time.Second) // under 120 s left
	got, err := k.APIKey(context.Background())
	if err != nil || got == before {
		t.Fatalf("refresh: %v (new token: %v)", err, got != before)
	}
	if access, refresh := e.stored(); access != got || refresh == rtBefore {
		t.Fatal("the refreshed login is not in secrets.json: the CLI's refresh token was rotated and lost")
	}
	if rot, _, _ := e.o.Stats(); rot != 1 {
		t.Fatalf("%d rotations", rot)
	}
	fi, err := os.Stat(e.secrets)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1000 || st.Gid != 1000 {
		t.Fatalf("owner %d:%d, want 1000:1000", st.Uid, st.Gid)
	}
	if err := os.Rename(e.secrets, e.secrets+".x"); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("the file is no longer the mount: %v", err)
	}
	e.checkFile() // every other entry, mode 0600, nothing left beside it
	if strings.Contains(e.log.String(), "level=WARN") {
		t.Errorf("a warning for a login that could be stored:\n%s", e.log)
	}
	// The CLI on the host (another thread: outside this namespace, where
	// secrets.json is no mount point) goes on with the login the exporter
	// stored, and replaces the file as it does.
	e.clk.Advance(3*time.Minute + time.Second)
	host := make(chan string)
	go func() { host <- cliRefresh(hostPath, e.cliURL, e.clk.Now) }()
	if out := <-host; out != "refreshed" {
		t.Fatalf("the CLI after the exporter's refresh: %s", out)
	}
	// The mount now holds the old file, which no CLI reads: the exporter
	// sees its stale copy and does not refresh from it (that refresh
	// token was rotated), and says to mount the folder.
	if got2, err := k.APIKey(context.Background()); err != nil || got2 != got {
		t.Fatalf("the stale copy's token, still valid: %v", err)
	}
	if rot, req, _ := e.o.Stats(); rot != 2 || req != 2 {
		t.Fatalf("%d rotations in %d requests, want 2 in 2 (no refresh from the stale copy)", rot, req)
	}
	if n := strings.Count(e.log.String(), "mount the folder of secrets.json"); n != 1 {
		t.Fatalf("%d lines say to mount the folder, want 1:\n%s", n, e.log)
	}
	e.noTokensLogged()
}

// A bind-mounted secrets.json that is also read-only (`-v …:ro`): it can
// be neither replaced nor written, which the check before a refresh sees
// (it used to make a file beside it and pass): nothing is sent, the
// stored token is used while valid, one line says why.
func TestOAuthNoRefreshOfAReadOnlyBindMountedSecretsFile(t *testing.T) {
	if !inPrivateMountNamespace(t) {
		return
	}
	e := newOAuthEnv(t, 5*time.Minute)
	if err := syscall.Mount(e.secrets, e.secrets, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(e.secrets, 0) })
	if err := syscall.Mount("", e.secrets, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("read-only remount: %v", err)
	}
	k := e.mustKey(true)
	before, rtBefore := e.stored()
	e.clk.Advance(3*time.Minute + time.Second)
	if got, err := k.APIKey(context.Background()); err != nil || got != before {
		t.Fatalf("valid token: %v (changed: %v)", err, got != before)
	}
	if _, req, _ := e.o.Stats(); req != 0 {
		t.Fatalf("%d refresh requests for a login that could not be stored", req)
	}
	if n := strings.Count(e.log.String(), "cannot write"); n != 1 {
		t.Fatalf("%d lines say why the login is not refreshed, want 1:\n%s", n, e.log)
	}
	if _, rt := e.stored(); rt != rtBefore {
		t.Fatal("secrets.json changed")
	}
	e.noTokensLogged()
}
