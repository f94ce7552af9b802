// Package testsupport holds the test scaffolding: stand-ins, generators,
// fixtures and helpers that exist only for tests and benchmarks.
package testsupport

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowed lists the product-side packages that may import test support
// outside a _test.go file: the benchmark corpus generator, which is a
// developer's command and not part of the exporter.
var allowed = map[string]bool{
	"cmd/amp-threadgen": true,
}

// TestProductDoesNotImportTestSupport keeps the boundary the folder names:
// no code that is built into amp-exporter imports a package under
// internal/testsupport.
func TestProductDoesNotImportTestSupport(t *testing.T) {
	root := filepath.Join("..", "..")
	const prefix = "github.com/amp-exporter/amp-exporter/internal/testsupport"
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == "internal/testsupport", strings.HasPrefix(rel, ".") && rel != ".",
				d.Name() == "testdata", rel == "e2e":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, prefix) && !allowed[filepath.ToSlash(filepath.Dir(rel))] {
				t.Errorf("%s imports %s: test support is for tests only", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d Go files; the walk did not reach the module", checked)
	}
}
