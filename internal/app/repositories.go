package app

import (
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/repomap"
)

// repositorySteps are the apply steps of labels and repositories: the
// switch and the compiled rules go to the stores' shared configuration of
// the repository label (store.Repositories). A reload whose rules do not
// compile is refused before anything changes. What a reload changes
// applies to threads counted afterwards: a thread keeps the repository it
// was first counted under (the switch turned off hides it on /metrics at
// once).
func (a *App) repositorySteps() []applyStep {
	var (
		on       bool
		prepared *repomap.Mapper
	)
	return []applyStep{
		{name: "labels", apply: func(cfg *config.Config) error {
			on = cfg.Labels.Repository
			a.threads.Repositories().Set(on, prepared)
			return nil
		}},
		{name: "repositories", prepare: func(cfg *config.Config) (err error) {
			prepared, err = cfg.RepositoryMapper()
			return err
		}, apply: func(*config.Config) error {
			a.threads.Repositories().Set(on, prepared)
			return nil
		}},
	}
}
