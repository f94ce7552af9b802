//go:build linux || darwin

package ampserver

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// TestMain runs the stand-in as a process of its own when asked
// (standinChild), so that a benchmark's CPU time is the exporter's alone.
func TestMain(m *testing.M) {
	if os.Getenv("AMP_STANDIN_CHILD") == "1" {
		os.Exit(standinChild())
	}
	os.Exit(m.Run())
}

// benchCorpus is the benchmarks' corpus: 2,000 threads, ~1 GB
// (AMP_BENCH_THREADS and AMP_BENCH_BYTES change that).
func benchCorpus() *threadgen.Generator {
	n, total := 2000, int64(1e9)
	if v, err := strconv.Atoi(os.Getenv("AMP_BENCH_THREADS")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.ParseInt(os.Getenv("AMP_BENCH_BYTES"), 10, 64); err == nil && v > 0 {
		total = v
	}
	return threadgen.New(threadgen.Options{Threads: n, TotalBytes: total, Seed: 1})
}

// standinChild serves the benchmark corpus on loopback, prints its URL,
// and serves until its standard input closes.
func standinChild() int {
	srv := ampservertest.New(testKey, "bench@example.com")
	defer srv.Close()
	if os.Getenv("AMP_BENCH_GZIP") == "0" {
		srv.DisableGzip()
	}
	if os.Getenv("AMP_BENCH_ZSTD") == "1" {
		srv.EnableZstd()
	}
	g := benchCorpus()
	if err := srv.PutGenerated(g, 0, g.Len()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(srv.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startStandin starts the stand-in process and returns its URL; it stops
// when the benchmark ends.
func startStandin(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AMP_STANDIN_CHILD=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("stand-in process: %v", err)
	}
	return strings.TrimSpace(line)
}
