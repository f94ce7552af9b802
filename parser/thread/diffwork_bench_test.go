//go:build unix

package thread

import "testing"

// BenchmarkDiffWorkPerParse is the CPU one parse of a thread of costly
// edits takes with its lines counted, against the same parse with them
// left uncounted (Parser.SkipLineCounts: the inputs read, not diffed) in
// the same run, turn about: the 2 MB thread of 80 edit_file calls of 4,097
// unrelated lines each, 20 edits of 9,000 lines (past the bit-parallel
// LCS: Myers' search), and threads of such edits filling the 64 MiB file
// limit. It reports the
// median CPU per parse of each way, their ratio, the edits and those
// counted:
//
//	go test ./parser/thread -run '^$' -bench DiffWorkPerParse -benchtime 3x
func BenchmarkDiffWorkPerParse(b *testing.B) {
	for _, c := range []struct {
		name         string
		edits, lines int
		size         int // the thread's size, the edits repeated
	}{
		{"2MB-80x4097", 80, 4097, 0},
		{"1MB-20x9000", 20, 9000, 0},
		{"64MiB-x4097", 80, 4097, 64 << 20},
		{"64MiB-x9000", 20, 9000, 64 << 20},
	} {
		b.Run(c.name, func(b *testing.B) {
			doc := costlyThread(b, c.edits, c.lines, c.size)
			counting, skipping := NewParser(), NewParser()
			skipping.SkipLineCounts()
			var full, skip []float64
			var counted, edits int
			for i := 0; b.Loop(); i++ {
				for k := range 2 {
					p := counting
					if (i+k)%2 == 1 {
						p = skipping
					}
					start := cpuTime(b)
					th, err := p.ParseBytes(doc)
					if err != nil {
						b.Fatal(err)
					}
					ms := (cpuTime(b) - start).Seconds() * 1000
					if p == counting {
						full = append(full, ms)
						counted, edits = 0, 0
						for _, it := range Summarize(th).Items {
							if it.Tool == "Edit" {
								edits++
							}
							if it.Lines {
								counted++
							}
						}
					} else {
						skip = append(skip, ms)
					}
				}
			}
			b.SetBytes(int64(len(doc)))
			b.ReportMetric(median(full), "ms-counted/parse")
			b.ReportMetric(median(skip), "ms-uncounted/parse")
			b.ReportMetric(median(full)/median(skip), "ratio")
			b.ReportMetric(float64(counted), "edits-counted")
			b.ReportMetric(float64(edits), "edits")
		})
	}
}

// costlyThread is bigEdits' thread, its edits repeated until the thread
// is size bytes (under it) when size is not 0.
func costlyThread(b *testing.B, edits, lines, size int) []byte {
	doc, olds, news := bigEdits(b, edits, lines)
	if size == 0 {
		return doc
	}
	n := edits * (size - 4096) / len(doc)
	calls := make([]call, n)
	for i := range calls {
		calls[i] = call{name: "edit_file", status: "done",
			input: map[string]any{"path": "/w/f.txt", "old_str": olds[i%edits], "new_str": news[i%edits]}}
	}
	doc = editThread(b, calls)
	if len(doc) > size {
		b.Fatalf("%d bytes for %d", len(doc), size)
	}
	return doc
}
