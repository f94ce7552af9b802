package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seed adds the testdata answers of one endpoint to a fuzz corpus.
func seed(f *testing.F, prefix string) {
	files, _ := filepath.Glob(filepath.Join("testdata", prefix+"_*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkShape: a Shape stays bounded whatever the answer.
func checkShape(t *testing.T, s *Shape) {
	if s == nil {
		t.Fatal("no shape")
	}
	if len(s.Fields) > maxPaths+1 || len(s.Anomalies) > maxPaths+1 {
		t.Fatalf("shape of %d fields, %d anomalies", len(s.Fields), len(s.Anomalies))
	}
	for p := range s.Fields {
		if len(p) > 16*(maxKeyBytes+8) {
			t.Fatalf("path of %d bytes", len(p))
		}
	}
}

func checkUSD(t *testing.T, v float64) {
	if v < 0 || v > maxUSD || v != v {
		t.Fatalf("usd %v", v)
	}
}

func checkCounts(t *testing.T, ns ...uint64) {
	for _, n := range ns {
		if n > maxCount {
			t.Fatalf("count %d", n)
		}
	}
}

func FuzzDecodeThreadPage(f *testing.F) {
	seed(f, "threads")
	f.Fuzz(func(t *testing.T, b []byte) {
		p, s, err := DecodeThreadPage(b)
		checkShape(t, s)
		if err != nil && (len(p.Threads) > 0 || p.NextCursor != "") {
			t.Fatal("a page with an error")
		}
		if len(p.NextCursor) > maxCursorBytes {
			t.Fatal("cursor unbounded")
		}
		for _, th := range p.Threads {
			if !validID(th.ID) || !validID(th.CreatorUserID) {
				t.Fatalf("thread %q by %q kept", th.ID, th.CreatorUserID)
			}
			for _, id := range append([]string{th.MainThreadID, th.ParentThreadID}, th.SubThreadIDs...) {
				if id != "" && !validID(id) {
					t.Fatalf("id %q kept", id)
				}
			}
			for _, r := range th.Repositories {
				if r == "" || len(r) > maxURLBytes {
					t.Fatalf("repository of %d bytes", len(r))
				}
			}
		}
	})
}

func FuzzDecodeThreadUsage(f *testing.F) {
	seed(f, "usage")
	f.Fuzz(func(t *testing.T, b []byte) {
		u, s, err := DecodeThreadUsage(b)
		checkShape(t, s)
		if err == nil && !validID(u.ThreadID) {
			t.Fatalf("thread id %q", u.ThreadID)
		}
		checkUSD(t, u.USD)
		for _, m := range u.Models {
			if !validID(m.Model) {
				t.Fatalf("model %q", m.Model)
			}
			checkUSD(t, m.USD)
			checkCounts(t, m.Requests, m.InputTokens, m.OutputTokens, m.CacheReadInputTokens, m.CacheCreationInputTokens)
		}
	})
}

func FuzzDecodeDailyUsage(f *testing.F) {
	seed(f, "daily")
	f.Fuzz(func(t *testing.T, b []byte) {
		du, s, err := DecodeDailyUsage(b)
		checkShape(t, s)
		if err != nil && len(du.Days) > 0 {
			t.Fatal("days with an error")
		}
		for _, d := range du.Days {
			if len(d.Date) != 10 || strings.Count(d.Date, "-") != 2 {
				t.Fatalf("date %q", d.Date)
			}
			for _, u := range d.Users {
				if !validID(u.UserID) {
					t.Fatalf("user %q", u.UserID)
				}
				checkUSD(t, u.USD)
				checkCounts(t, u.LinesAdded, u.LinesDeleted, u.LinesModified)
				for _, m := range u.Models {
					if !validID(m.Model) {
						t.Fatalf("model %q", m.Model)
					}
					checkUSD(t, m.USD)
					checkCounts(t, m.Requests, m.InputTokens, m.OutputTokens, m.CacheReadInputTokens, m.CacheCreationInputTokens, m.TotalTokens)
				}
			}
		}
	})
}
