package store

import (
	"path/filepath"
	"sort"
)

// FileDirs returns the directories that hold present files, sorted. The
// watcher uses it to forget files of directories that are no longer
// configured (a state restored after threads.dirs changed).
func (s *ThreadStore) FileDirs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[string]bool{}
	var out []string
	for p := range s.files {
		if d := filepath.Dir(p); !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}
