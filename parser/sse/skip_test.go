package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestSkipOversized: an event over the size limit (in one long line, or in
// many data lines) is dropped without being held and reported with its id,
// and the events after it are read: a resume is not stopped by it again.
func TestSkipOversized(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	stream := "id: 1\nevent: phase\ndata: {}\n\n" +
		"id: 2\nevent: synthesis_delta\ndata: " + big + "\n\n" + // one line over MaxLineBytes
		"id: 3\nevent: phase\ndata: a\r\ndata: " + big[:3000] + "\ndata: " + big[:3000] + "\n\n" + // data over MaxEventBytes
		"id: 4\r\nevent: turn.completed\r\ndata: {}\r\n\r\n"
	for _, chunk := range []int{1 << 20, 7, 4096} {
		p := NewParser(&chunked{s: stream, n: chunk}, Options{MaxLineBytes: 4096, MaxEventBytes: 4096, SkipOversized: true})
		var got []Event
		for {
			ev, err := p.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("chunk %d: %v", chunk, err)
			}
			got = append(got, ev)
		}
		want := []Event{
			{ID: "1", Event: "phase", Data: "{}"},
			{ID: "2", Event: "synthesis_delta", Oversized: true},
			{ID: "3", Event: "phase", Oversized: true},
			{ID: "4", Event: "turn.completed", Data: "{}"},
		}
		if len(got) != len(want) {
			t.Fatalf("chunk %d: %d events %+v", chunk, len(got), got)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("chunk %d: event %d = %+v, want %+v", chunk, i, got[i], want[i])
			}
		}
	}
	// Without the option the limits still end the parse.
	p := NewParser(strings.NewReader(stream), Options{MaxLineBytes: 4096, MaxEventBytes: 4096})
	p.Next()
	if _, err := p.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("without SkipOversized: %v", err)
	}
}

type chunked struct {
	s string
	n int
}

func (c *chunked) Read(b []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), c.n)], c.s)
	c.s = c.s[n:]
	return n, nil
}
