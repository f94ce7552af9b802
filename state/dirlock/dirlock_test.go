package dirlock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// holdEnv makes the test binary a process that holds a directory until it
// is killed (TestMain).
const holdEnv = "DIRLOCK_TEST_HOLD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		l, err := Acquire(dir)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println("locked")
		_, _ = io.Copy(io.Discard, os.Stdin) // until killed, or stdin closes
		if err := l.Release(); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestSecondLockFailsUntilReleased(t *testing.T) {
	dir := t.TempDir() + "/state" // created by Acquire
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second lock: %v, want ErrLocked naming %s", err, dir)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Release()
}

// startHolder starts a process that holds dir, and returns once it does.
func startHolder(t *testing.T, dir string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if wrapper := os.Getenv("AMP_TEST_EXEC"); wrapper != "" {
		// Under an emulator (make test-arm64) the holder runs under it too.
		cmd = exec.Command(wrapper, os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("holder process: %q %v", line, err)
	}
	return cmd, stdin
}

func TestAnotherProcessHoldsTheDirectory(t *testing.T) {
	t.Run("until it exits", func(t *testing.T) {
		dir := t.TempDir()
		cmd, stdin := startHolder(t, dir)
		_, err := Acquire(dir)
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("lock held by process %d: %v, want ErrLocked", cmd.Process.Pid, err)
		}
		if want := fmt.Sprintf("process %d", cmd.Process.Pid); releasedByOS && !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name the holder (%s)", err, want)
		}
		stdin.Close() // the holder releases and exits
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		l, err := Acquire(dir)
		if err != nil {
			t.Fatalf("after the holder exited: %v", err)
		}
		l.Release()
	})
	t.Run("killed", func(t *testing.T) {
		dir := t.TempDir()
		cmd, _ := startHolder(t, dir)
		if _, err := Acquire(dir); !errors.Is(err, ErrLocked) {
			t.Fatalf("lock held by another process: %v, want ErrLocked", err)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		l, err := Acquire(dir)
		if !releasedByOS {
			// The lock file's existence is the lock: a crash leaves it.
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "crashed: remove ") {
				t.Fatalf("after a crash: %v, want ErrLocked saying to remove the lock file", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("the system did not release the lock of a killed process: %v", err)
		}
		l.Release()
	})
}
