package main

import (
	"fmt"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/app"
	"github.com/amp-exporter/amp-exporter/pricing"
	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// counting is what a command that counts threads outside the exporter
// (backfill, report) takes from the configuration: the prices and the
// repository label as the live exporter has them, so that its figures
// join the exporter's series.
type counting struct {
	cfg    *config.Config
	env    config.Env
	pricer *pricing.Pricer
	repos  *ampstore.Repositories
}

// loadCounting reads the configuration file (its path "" for none) and
// builds the prices and the repository rules from it.
func loadCounting(configFile string) (counting, error) {
	cfg, env, err := loadConfig(configFile)
	if err != nil {
		return counting{}, err
	}
	return countingFor(cfg, env)
}

// loadConfig reads the configuration file (its path "" for none).
func loadConfig(configFile string) (*config.Config, config.Env, error) {
	env := config.OSEnv()
	cfg, err := config.Load(configFile, env)
	if err != nil {
		return nil, config.Env{}, fmt.Errorf("configuration: %w", err)
	}
	return cfg, env, nil
}

// countingFor builds the prices and the repository rules of a
// configuration.
func countingFor(cfg *config.Config, env config.Env) (counting, error) {
	embedded, err := pricing.Embedded(nil)
	if err != nil {
		return counting{}, fmt.Errorf("embedded price table: %w", err)
	}
	pricer, err := app.BuildPricer(cfg.Pricing, embedded)
	if err != nil {
		return counting{}, fmt.Errorf("configuration: %w", err)
	}
	rules, err := cfg.RepositoryMapper()
	if err != nil {
		return counting{}, fmt.Errorf("configuration: %w", err)
	}
	repos := ampstore.NewRepositories(nil)
	repos.Set(cfg.Labels.Repository, rules)
	return counting{cfg: cfg, env: env, pricer: pricer, repos: repos}, nil
}
