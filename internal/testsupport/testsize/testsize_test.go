package testsize

import "testing"

func TestLong(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "1": true, "yes": true} {
		t.Setenv(LongEnv, v)
		if got := Long(); got != want {
			t.Errorf("%s=%q: Long() = %v, want %v", LongEnv, v, got, want)
		}
	}
}
