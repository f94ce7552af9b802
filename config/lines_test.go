package config

import (
	"strings"
	"testing"
)

// Every configuration error names the file, the line and the key.
func TestErrorsNameFileLineAndKey(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string // the whole message after `config file "PATH": `
	}{
		{"negative duration", "threads:\n  poll_interval: -5m\n",
			`line 2: threads.poll_interval: "-5m" is negative; a duration is like 30s, 5m or 1h`},
		{"zero duration", "threads:\n  dirs: [/x]\n  resync_interval: 0s\n",
			`line 3: threads.resync_interval: a zero duration is not allowed; leave the key out for its default`},
		{"bare zero", "streams:\n  poll_interval: 0\n",
			`line 2: streams.poll_interval: a zero duration is not allowed; leave the key out for its default`},
		{"zero amy timeout, which would otherwise silently mean the default", "amy:\n  - name: main\n    base_url: http://127.0.0.1:1\n    idle_timeout: 0s\n",
			`line 4: amy[0].idle_timeout: a zero duration is not allowed; leave the key out for its default`},
		{"not a duration", "threads:\n  resync_interval: soon\n",
			`line 2: threads.resync_interval: "soon" is not a duration; write it like 30s, 5m or 1h`},
		{"too short", "threads:\n  dirs: [/x]\n  resync_interval: 10ms\n",
			`line 3: threads.resync_interval: 10ms is too short, use at least 1s`},
		{"too small", "limits:\n  max_label_values: 0\n",
			`line 2: limits.max_label_values: 0, must be at least 1`},
		{"bad size", "limits:\n  max_file_bytes: 12 parsecs\n",
			`line 2: limits.max_file_bytes: invalid size "12 parsecs": unknown unit "parsecs" (use KiB, MiB, GiB, KB, MB or GB)`},
		{"wrong type", "limits:\n  max_label_values: many\n",
			"line 2: limits.max_label_values: cannot unmarshal !!str `many` into int"},
		{"unknown key", "threads:\n  dir: /x\n",
			`line 2: threads.dir: unknown key "dir" in threads`},
		{"empty dir entry", "threads:\n  dirs: ['']\n",
			`line 2: threads.dirs: an entry is empty`},
		{"amy entry by name", "amy:\n  - name: main\n    base_url: ftp://x\n",
			`line 3: amy["main"].base_url: want an http:// or https:// URL`},
		{"pricing model", "pricing:\n  models:\n    my-model:\n      input: 1\n",
			`line 3: pricing.models["my-model"]: input and output are required (USD per million tokens)`},
		{"a key left out: the enclosing section's line", "streams:\n  max_line_bytes: 2GiB\n",
			`line 1: streams.ingest.max_body_bytes must be at least streams.max_line_bytes`},
		{"second document", "threads:\n  dirs: [/x]\n---\nthreads:\n  dirs: [/y]\n",
			`line 3: a second YAML document (after ---); a configuration file holds one document`},
		{"two problems, two lines", "threads:\n  resync_interval: -1s\n  poll_interval: -1s\n",
			`line 2: threads.resync_interval: "-1s" is negative; a duration is like 30s, 5m or 1h; line 3: threads.poll_interval: "-1s" is negative; a duration is like 30s, 5m or 1h`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.content)
			_, err := Load(path, testEnv(nil))
			if err == nil {
				t.Fatalf("%q: no error", tt.content)
			}
			prefix := `config file "` + path + `": `
			got, ok := strings.CutPrefix(err.Error(), prefix)
			if !ok || got != tt.want {
				t.Errorf("%q:\n got %q\nwant %q", tt.content, err, prefix+tt.want)
			}
		})
	}
}

func TestOneDocumentIsFine(t *testing.T) {
	for _, content := range []string{
		"---\nthreads:\n  dirs: [/x]\n",
		"threads:\n  dirs: [/x]\n---\n",
		"threads:\n  dirs: [/x]\n...\n",
		"# only a comment\n",
		"",
	} {
		if _, err := Load(writeConfig(t, content), testEnv(nil)); err != nil {
			t.Errorf("%q: %v", content, err)
		}
	}
}
