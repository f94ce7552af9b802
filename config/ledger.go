package config

import (
	"fmt"
	"time"
)

// LedgerConfig is how the usage ledger is shown: the landing page's spend,
// /api/spend and the statusline take days and months in Timezone.
type LedgerConfig struct {
	// Timezone is an IANA zone name (Europe/Berlin, Asia/Kolkata, UTC);
	// "" or "Local" is the machine's zone.
	Timezone string `yaml:"timezone"`

	loc *time.Location
}

// resolveLedger loads the zone, so that a name the zone database does not
// know is refused at load, naming the key.
func (c *Config) resolveLedger(errs *[]string) {
	c.Ledger.loc = time.Local
	switch c.Ledger.Timezone {
	case "", "Local":
		return
	}
	loc, err := time.LoadLocation(c.Ledger.Timezone)
	if err != nil {
		*errs = append(*errs, fmt.Sprintf("ledger.timezone: %q is not a time zone (want an IANA name such as Europe/Berlin or UTC)", c.Ledger.Timezone))
		return
	}
	c.Ledger.loc = loc
}

// Location is the zone days and months of the spend are taken in (the
// machine's when none is configured).
func (l LedgerConfig) Location() *time.Location {
	if l.loc == nil {
		return time.Local
	}
	return l.loc
}
