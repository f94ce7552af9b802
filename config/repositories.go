package config

import (
	"fmt"

	"github.com/amp-exporter/amp-exporter/internal/repomap"
)

// LabelsConfig turns labels taken from data on or off.
type LabelsConfig struct {
	// Repository puts the thread's git remote (host/path, credentials
	// removed) on the usage families; false leaves it empty everywhere.
	Repository bool `yaml:"repository"`
}

// RepositoryRule names the repositories its regular expression matches
// (docs/repositories.md).
type RepositoryRule struct {
	// Match is an RE2 expression matched against the whole normalised
	// remote (host/path).
	Match string `yaml:"match"`
	// Name replaces what Match matched; $1, ${name} are its groups.
	Name string `yaml:"name"`
}

// resolveRepositories checks every repositories rule; each error names the
// rule's index and key, so the file's line is found for it.
func (c *Config) resolveRepositories(errs *[]string) {
	for i, r := range c.Repositories {
		// The error starts with the key it is about (match, name).
		if _, err := repomap.Compile(r.Match, r.Name); err != nil {
			*errs = append(*errs, fmt.Sprintf("repositories[%d].%v", i, err))
		}
	}
}

// RepositoryMapper returns the repositories rules, compiled, in order. A
// configuration Load returned always compiles.
func (c *Config) RepositoryMapper() (*repomap.Mapper, error) {
	rules := make([]repomap.Rule, 0, len(c.Repositories))
	for i, r := range c.Repositories {
		rule, err := repomap.Compile(r.Match, r.Name)
		if err != nil {
			return nil, fmt.Errorf("repositories[%d].%w", i, err)
		}
		rules = append(rules, rule)
	}
	return repomap.New(rules...), nil
}
