package api

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// decoders by the prefix of a testdata file's name.
var decoders = map[string]func([]byte) (any, *Shape, error){
	"threads": func(b []byte) (any, *Shape, error) { return DecodeThreadPage(b) },
	"usage":   func(b []byte) (any, *Shape, error) { return DecodeThreadUsage(b) },
	"daily":   func(b []byte) (any, *Shape, error) { return DecodeDailyUsage(b) },
}

// golden renders a decoder's result: the value, the anomalies (sorted)
// and the error.
func golden(v any, s *Shape, err error) []byte {
	type anomaly struct {
		Reason, Field string
		N             int
	}
	out := struct {
		Value     any
		Anomalies []anomaly
		Fields    map[string]int
		Error     string `json:",omitempty"`
	}{Value: v, Fields: s.Fields}
	for _, a := range s.Sorted() {
		out.Anomalies = append(out.Anomalies, anomaly{a.Reason, a.Field, s.Anomalies[a]})
	}
	if err != nil {
		out.Error = err.Error()
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return append(b, '\n')
}

// TestDecodersGolden decodes every testdata/*.json with the decoder its
// name starts with and compares with its .golden (go test -update
// rewrites them; read the diff before committing it).
func TestDecodersGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			decode := decoders[strings.SplitN(name, "_", 2)[0]]
			if decode == nil {
				t.Fatalf("no decoder for %s", name)
			}
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := golden(decode(in))
			gf := strings.TrimSuffix(f, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(gf, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(gf)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s:\n%s", name, gf, got)
			}
		})
	}
}

// TestDecoderRules holds the rules the goldens show to explicit checks.
func TestDecoderRules(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Run("listing", func(t *testing.T) {
		p, s, err := DecodeThreadPage(read("threads_odd.json"))
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, th := range p.Threads {
			ids = append(ids, th.ID)
		}
		// Without id or creatorUserID, or not an object: skipped.
		if fmt.Sprint(ids) != "[T-2 T-8]" || p.NextCursor != "" {
			t.Errorf("threads %v, cursor %q", ids, p.NextCursor)
		}
		if r := p.Threads[0].Repositories; len(r) != 1 || r[0] != "https://github.com/acme/app" {
			t.Errorf("repositories %q", r)
		}
		for reason, n := range map[string]int{ReasonNullItem: 3, ReasonUnknownField: 3, ReasonMissingField: 4} {
			if s.Count(reason) != n {
				t.Errorf("%s: %d, want %d (%v)", reason, s.Count(reason), n, s.Anomalies)
			}
		}
	})
	t.Run("usage sums", func(t *testing.T) {
		_, s, _ := DecodeThreadUsage(read("usage_full.json"))
		if len(s.Anomalies) != 0 {
			t.Errorf("anomalies in a well-formed answer: %v", s.Anomalies)
		}
		_, s, _ = DecodeThreadUsage(read("usage_rounded.json"))
		if s.Count(ReasonSumMismatch) != 0 {
			t.Error("a total within a cent's rounding counted as a mismatch")
		}
		u, s, _ := DecodeThreadUsage(read("usage_odd.json"))
		if s.Count(ReasonSumMismatch) != 1 || len(u.Models) != 2 || u.Models[0].Requests != 4 || u.Models[0].USD != 0.5 || u.Models[0].InputTokens != 0 {
			t.Errorf("%+v %v", u, s.Anomalies)
		}
	})
	t.Run("rollup", func(t *testing.T) {
		du, s, err := DecodeDailyUsage(read("daily_full.json"))
		if err != nil || len(s.Anomalies) != 0 || len(du.Days) != 2 || len(du.Days[1].Users) != 2 {
			t.Fatalf("%+v %v %v", du, s.Anomalies, err)
		}
		b := du.Days[1].Users[1]
		if b.USD != 1.75 || len(b.Models) != 2 || b.Models[0].Model != "claude-x" || b.Models[0].TotalTokens != 0 {
			t.Errorf("%+v", b)
		}
		_, s, _ = DecodeDailyUsage(read("daily_odd.json"))
		if s.Count(ReasonSumMismatch) != 3 { // metadata.totalUsage, metrics.usage, totalTokens
			t.Errorf("%v", s.Anomalies)
		}
	})
	t.Run("not countable", func(t *testing.T) {
		for name, field := range map[string]string{"threads_no_threads.json": "threads", "threads_not_an_array.json": "threads",
			"usage_no_threadid.json": "threadID", "daily_no_data.json": "data", "threads_truncated.json": "", "usage_null.json": ""} {
			_, _, err := decoders[strings.SplitN(name, "_", 2)[0]](read(name))
			var ae *AnswerError
			if err == nil || !errorsAs(err, &ae) || ae.Field != field {
				t.Errorf("%s: %v, want an AnswerError naming %q", name, err, field)
			}
		}
	})
}

func errorsAs(err error, target **AnswerError) bool {
	ae, ok := err.(*AnswerError)
	if ok {
		*target = ae
	}
	return ok
}
