//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// Remote-write 2.0 against a Prometheus 3 server (Debian's 2.42 knows only
// 1.0).
func TestRemoteWrite2AgainstPrometheus3(t *testing.T) {
	bin := requirePrometheus3(t)
	for _, tc := range []struct {
		name     string
		accepted []string
		fallback bool
	}{
		{"accepts 2.0", []string{"io.prometheus.write.v2.Request", "prometheus.WriteRequest"}, false},
		{"accepts 1.0 only", []string{"prometheus.WriteRequest"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var flags []string
			for _, m := range tc.accepted {
				flags = append(flags, "--web.remote-write-receiver.accepted-protobuf-messages="+m)
			}
			threads := t.TempDir()
			copyFixtures(t, threads)
			rcv := startReceiverWith(t, bin, flags, t.TempDir(), freePort(t))
			exp := startPushingExporter(t, fleetMember{user: "alice", host: "laptop-1", threads: threads,
				message: "io.prometheus.write.v2.Request"}, rcv.base)
			want := byLabel(exp.metrics(t), "amp_tokens_total", "token_type", nil)
			waitQuery(t, rcv, `sum by (token_type) (amp_tokens_total{user="alice",host="laptop-1"})`, "token_type", want, 30*time.Second)
			// Classic histograms arrive whole.
			waitQuery(t, rcv, `sum(amp_exchange_duration_seconds_bucket{le="+Inf"}) - sum(amp_exchange_duration_seconds_count)`, "", map[string]float64{"": 0}, 10*time.Second)
			if got := strings.Contains(exp.output.String(), "does not accept remote-write 2.0"); got != tc.fallback {
				t.Errorf("fell back to 1.0: %v, want %v:\n%s", got, tc.fallback, exp.output.String())
			}
			mfs := exp.metrics(t)
			if v, _ := value(mfs, "amp_exporter_remote_write_samples_total", map[string]string{"result": "failed"}); v != 0 {
				t.Errorf("%v samples failed", v)
			}
			if v, _ := value(mfs, "amp_exporter_remote_write_samples_total", map[string]string{"result": "sent"}); v == 0 {
				t.Error("nothing counted as sent")
			}
		})
	}
}
