package thread

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// benchDocs generates a small in-memory corpus (about 40 MB, the size mix of
// the real one) so the parser's CPU cost is measured without I/O.
var (
	benchOnce  sync.Once
	benchData  [][]byte
	benchTotal int64
)

func benchDocs(b *testing.B) ([][]byte, int64) {
	b.Helper()
	benchOnce.Do(func() { benchData, benchTotal = genDocs() })
	return benchData, benchTotal
}

func genDocs() ([][]byte, int64) {
	g := threadgen.New(threadgen.Options{Threads: 80, TotalBytes: 40 << 20, Seed: 7, Start: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)})
	var docs [][]byte
	var total int64
	for i := 0; i < g.Len(); i++ {
		_, data := g.Thread(i)
		docs = append(docs, data)
		total += int64(len(data))
	}
	return docs, total
}

// BenchmarkParse compares, on one core, the scanner-based parser with a
// copy of the same bytes (the floor) and with encoding/json.
func BenchmarkParse(b *testing.B) {
	docs, total := benchDocs(b)
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(total)
		buf := make([]byte, 0, 64<<20)
		for i := 0; i < b.N; i++ {
			for _, d := range docs {
				buf = append(buf[:0], d...)
			}
		}
	})
	b.Run("scanner", func(b *testing.B) {
		b.SetBytes(total)
		p := NewParser()
		for i := 0; i < b.N; i++ {
			for _, d := range docs {
				th, err := p.ParseBytes(d)
				if err != nil {
					b.Fatal(err)
				}
				Summarize(th)
			}
		}
	})
	b.Run("scanner-reader", func(b *testing.B) {
		b.SetBytes(total)
		p := NewParser()
		for i := 0; i < b.N; i++ {
			for _, d := range docs {
				th, err := p.Parse(bytes.NewReader(d))
				if err != nil {
					b.Fatal(err)
				}
				Summarize(th)
			}
		}
	})
	b.Run("encoding-json-any", func(b *testing.B) {
		b.SetBytes(total)
		for i := 0; i < b.N; i++ {
			for _, d := range docs {
				var v map[string]any
				if err := json.Unmarshal(d, &v); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
