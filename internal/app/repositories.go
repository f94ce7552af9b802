package app

import (
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/repomap"
)

// repositorySteps are the apply steps of labels and repositories.
//
// The store does not put the repository label on series yet
// (docs/repositories.md): the steps check a reloaded configuration's rules
// as Load does — a reload whose rules do not compile is refused before
// anything changes — and keep the switch and the compiled rules in
// effect, which the store's wiring will read. What a reload changes then
// applies to what is counted afterwards.
func (a *App) repositorySteps() []applyStep {
	var (
		rules    repositoryConfig
		prepared *repomap.Mapper
	)
	return []applyStep{
		{name: "labels", apply: func(cfg *config.Config) error {
			rules.label = cfg.Labels.Repository
			return nil
		}},
		{name: "repositories", prepare: func(cfg *config.Config) (err error) {
			prepared, err = cfg.RepositoryMapper()
			return err
		}, apply: func(*config.Config) error {
			rules.mapper = prepared
			return nil
		}},
	}
}

// repositoryConfig is the repository label's configuration in effect.
type repositoryConfig struct {
	label  bool
	mapper *repomap.Mapper
}
