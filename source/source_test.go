package source

import (
	"errors"
	"testing"

	"github.com/amp-exporter/amp-exporter/config"
)

// Fixed records the parts a source reads at start and names, on every
// later configuration, exactly those that differ from the start.
func TestFixedNamesWhatChanged(t *testing.T) {
	var f Fixed
	f.Key("amp_server", func(c *config.Config) any { return c.AmpServer }).
		Key("limits.max_file_bytes", func(c *config.Config) any { return c.Limits.MaxFileBytes })
	start := config.Default()
	if err := f.Check(start); err != nil {
		t.Fatalf("first configuration: %v", err)
	}
	tests := []struct {
		name   string
		change func(*config.Config)
		want   []string
	}{
		{"nothing", func(*config.Config) {}, nil},
		{"another section", func(c *config.Config) { c.Limits.MaxLabelValues = 7 }, nil},
		{"one key", func(c *config.Config) { c.AmpServer.MaxConcurrency = 9 }, []string{"amp_server"}},
		{"both", func(c *config.Config) { c.AmpServer.Enabled = config.AmpServerOff; c.Limits.MaxFileBytes = 1 << 20 },
			[]string{"amp_server", "limits.max_file_bytes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Default()
			tc.change(c)
			err := f.Check(c)
			var re *RestartError
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tc.want == nil:
			case !errors.As(err, &re) || !errors.Is(err, ErrRestart):
				t.Fatalf("Check: %v, want a restart error", err)
			case len(re.Keys) != len(tc.want) || re.Keys[0] != tc.want[0] || re.Keys[len(re.Keys)-1] != tc.want[len(tc.want)-1]:
				t.Fatalf("keys %v, want %v", re.Keys, tc.want)
			}
		})
	}
	// Compared with the start, not with the last configuration.
	if err := f.Check(start); err != nil {
		t.Errorf("back to the first configuration: %v", err)
	}
}

func TestOffSourceWarnsOnlyOnChange(t *testing.T) {
	o := NewOff("amp_server", func(f *Fixed) {
		f.Key("amp_server", func(c *config.Config) any { return c.AmpServer })
	})
	if o.Name() != "amp_server" {
		t.Errorf("name %q", o.Name())
	}
	c := config.Default()
	if err := o.Apply(c); err != nil {
		t.Fatal(err)
	}
	if err := o.Apply(config.Default()); err != nil {
		t.Errorf("same configuration: %v", err)
	}
	c = config.Default()
	c.AmpServer.Enabled = config.AmpServerOn
	if err := o.Apply(c); !errors.Is(err, ErrRestart) || err.Error() != "a change of amp_server takes effect at the next restart" {
		t.Errorf("turned on: %v", err)
	}
}
