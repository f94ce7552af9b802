package main

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// statusline prints one line from a running exporter; nothing, exit 0,
// when none answers, when something else answers, or when it does not
// answer in time.
func TestStatusline(t *testing.T) {
	base := startExporter(t, generatedThreads(t, 8))
	var out, errOut bytes.Buffer
	if code := run([]string{"statusline", "--exporter", base}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	line := out.String()
	if strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "$") || !strings.Contains(line, " today · $") || !strings.HasSuffix(line, " month\n") {
		t.Errorf("line %q", line)
	}
	if strings.Contains(line, "\x1b[") {
		t.Errorf("color on a buffer: %q", line)
	}
	out.Reset()
	run([]string{"statusline", "--color", "--exporter", base}, &out, &errOut)
	if !strings.Contains(out.String(), "\x1b[2mtoday\x1b[0m") {
		t.Errorf("--color: %q", out.String())
	}

	// A listener that never answers.
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	for _, url := range []string{"http://127.0.0.1:1", "http://" + hung.Addr().String(), base + "/metrics", "not a url"} {
		out.Reset()
		errOut.Reset()
		if code := run([]string{"statusline", "--timeout", "100ms", "--exporter", url}, &out, &errOut); code != 0 || out.Len() != 0 || errOut.Len() != 0 {
			t.Errorf("%s: exit %d, printed %q, %q", url, code, out.String(), errOut.String())
		}
	}
}
