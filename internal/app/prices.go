package app

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/pricing"
)

// buildPricer reads the configured price table (the embedded one, or a
// LiteLLM file) and applies the per-model overrides. It runs at start and on
// every reload; a file that does not load fails the reload.
func BuildPricer(cfg config.PricingConfig, embedded *pricing.GenAIPrices) (*pricing.Pricer, error) {
	overrides := make(map[string]pricing.Price, len(cfg.Models))
	for model, mp := range cfg.Models {
		overrides[model] = pricing.MakePrice(mp.Input, mp.Output, mp.CacheRead, mp.CacheCreation)
	}
	if cfg.File == "" {
		return pricing.New(embedded, "genai-prices", embedded.Version, overrides), nil
	}
	data, err := os.ReadFile(cfg.File)
	if err != nil {
		return nil, fmt.Errorf("pricing.file: %w", err)
	}
	table, err := pricing.ParseLiteLLM(data)
	if err != nil {
		return nil, fmt.Errorf("pricing.file %q: %w", cfg.File, err)
	}
	sum := sha256.Sum256(data)
	return pricing.New(table, "litellm-file", "sha256:"+hex.EncodeToString(sum[:6]), overrides), nil
}
