package threadgen

import (
	"reflect"
	"testing"
	"time"
)

// The days add up to Spend's totals per model, in any zone, and the zone
// moves items between days.
func TestDailySpendAddsUpToSpend(t *testing.T) {
	g := New(Options{Threads: 40, TotalBytes: 40 * 15_000, Seed: 4, Repositories: 2})
	want := map[string]Tokens{}
	for _, rs := range g.Spend() {
		for model, tok := range rs.Tokens {
			want[model] = addTokens(want[model], tok)
		}
	}
	byZone := map[string]map[string]map[string]Tokens{}
	for _, zone := range []string{"UTC", "Asia/Kathmandu", "America/New_York"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		days := g.DailySpend(loc)
		got := map[string]Tokens{}
		for _, models := range days {
			for model, tok := range models {
				got[model] = addTokens(got[model], tok)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: days add up to %+v, Spend says %+v", zone, got, want)
		}
		if len(days) < 20 {
			t.Errorf("%s: %d days: the corpus spans four weeks", zone, len(days))
		}
		byZone[zone] = days
	}
	if reflect.DeepEqual(byZone["UTC"], byZone["Asia/Kathmandu"]) {
		t.Error("the same days in UTC and Kathmandu: the zone is not applied")
	}
}

func addTokens(a, b Tokens) Tokens {
	return Tokens{Input: a.Input + b.Input, Output: a.Output + b.Output, CacheRead: a.CacheRead + b.CacheRead, CacheCreation: a.CacheCreation + b.CacheCreation}
}
