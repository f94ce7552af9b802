package thread

import (
	"fmt"
	"testing"
)

// An assistant message's usage.features says what it was billed at, read
// as the CLI reads features: "fast" is fast, "fast" with "plaid" is plaid,
// "plaid" alone (the CLI never writes it) and anything else standard.
func TestUsageSpeed(t *testing.T) {
	for _, c := range []struct {
		features string // the usage's features member, "" for none
		want     Speed
	}{
		{``, SpeedStandard},
		{`"features":[]`, SpeedStandard},
		{`"features":["fast"]`, SpeedFast},
		{`"features":["fast","plaid"]`, SpeedPlaid},
		{`"features":["plaid","fast"]`, SpeedPlaid},
		{`"features":["plaid"]`, SpeedStandard},
		{`"features":["pro","fast"]`, SpeedFast},
		{`"features":["pro"]`, SpeedStandard},
		{`"features":"fast"`, SpeedStandard},
		{`"features":[1,{"fast":true},null,"fast"]`, SpeedFast},
		{`"features":null`, SpeedStandard},
	} {
		sep := ""
		if c.features != "" {
			sep = ","
		}
		doc := fmt.Sprintf(`{"v":1,"id":"T-1","messages":[{"role":"assistant","messageId":1,"content":[],"state":{"type":"complete","stopReason":"end_turn"},`+
			`"usage":{"model":"claude-opus-4-6"%s%s,"inputTokens":10,"outputTokens":20}}]}`, sep, c.features)
		th, err := NewParser().ParseBytes([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", c.features, err)
		}
		if got := th.Messages[0].Usage.Speed; got != c.want {
			t.Errorf("%s: usage speed %v, want %v", c.features, got, c.want)
		}
		s := Summarize(th)
		if len(s.Items) != 1 || s.Items[0].Speed != c.want {
			t.Errorf("%s: items %+v, want one at speed %v", c.features, s.Items, c.want)
		}
	}
}

// A thread billed by its ledger bills its events, which name no speed:
// they are standard whatever its messages say.
func TestLedgerItemsAreStandard(t *testing.T) {
	doc := `{"v":1,"id":"T-1","messages":[{"role":"assistant","messageId":1,"content":[],"usage":{"model":"claude-opus-4-6","features":["fast"],"inputTokens":10,"outputTokens":20}}],` +
		`"usageLedger":{"events":[{"id":"e1","model":"claude-opus-4-6","fromMessageId":0,"toMessageId":1,"tokens":{"input":10,"output":20},"credits":1}]}}`
	th, err := NewParser().ParseBytes([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range Summarize(th).Items {
		if it.Speed != SpeedStandard {
			t.Errorf("item %+v: speed %v in a thread billed by its ledger", it, it.Speed)
		}
	}
}

func TestSpeedString(t *testing.T) {
	for s, want := range map[Speed]string{SpeedStandard: "standard", SpeedFast: "fast", SpeedPlaid: "plaid", 9: "standard"} {
		if got := s.String(); got != want {
			t.Errorf("%d: %q, want %q", s, got, want)
		}
	}
}
