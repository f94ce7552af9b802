package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "f")
	if err := os.WriteFile(reg, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		max        int64
		want       string
		err        error
	}{
		{name: "regular", path: reg, max: 10, want: "hello"},
		{name: "symlink to regular", path: link, max: 10, want: "hello"},
		{name: "too large", path: reg, max: 4},
		{name: "directory", path: dir, max: 10, err: ErrNotRegular},
		{name: "missing", path: filepath.Join(dir, "nope"), max: 10, err: fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ReadFile(tc.path, tc.max)
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
			case tc.want == "":
				if err == nil {
					t.Fatal("no error")
				}
			case err != nil || string(b) != tc.want:
				t.Fatalf("%q %v", b, err)
			}
		})
	}
}
