package backfill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/snappy"

	"github.com/amp-exporter/amp-exporter/remotewrite"
)

// PushOptions configure Push.
type PushOptions struct {
	URL    string
	Client *http.Client
	// UserAgent of the requests.
	UserAgent string
	// MaxSamples bounds the samples of one request (default 5000).
	MaxSamples int
	// Retries of a request the receiver could not take for now (network,
	// 429, 5xx), with a doubling wait from MinBackoff (defaults 5, 500ms).
	Retries    int
	MinBackoff time.Duration
	// Progress, if not nil, is called after each request with the sample
	// times sent and their number.
	Progress func(done, total int)
}

// ErrOldSamplesRefused is returned by Push when the receiver refuses
// samples for being old.
var ErrOldSamplesRefused = errors.New("the receiver refuses old samples")

// Push sends the series to a remote-write 1.0 receiver in time order: one
// sample time after the other, each in requests of at most MaxSamples. It
// returns the number of samples sent.
func Push(ctx context.Context, o PushOptions, series []Series, target []Label) (int64, error) {
	if o.MaxSamples <= 0 {
		o.MaxSamples = 5000
	}
	if o.Retries <= 0 {
		o.Retries = 5
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	// Every series' labels, once; and the sample times in order.
	labels := make([][]remotewrite.Label, len(series))
	timeSet := map[int64]bool{}
	for i, s := range series {
		ls := []remotewrite.Label{{Name: "__name__", Value: MetricName(s.ID.Key.Fam)}}
		for _, l := range Labels(s.ID, target) {
			ls = append(ls, remotewrite.Label{Name: l.Name, Value: l.Value})
		}
		labels[i] = ls
		for _, t := range s.Times {
			timeSet[t] = true
		}
	}
	times := make([]int64, 0, len(timeSet))
	for t := range timeSet {
		times = append(times, t)
	}
	slices.Sort(times)
	next := make([]int, len(series)) // per series, its next sample time
	cur := make([]cursor, len(series))
	for i := range series {
		cur[i].s = &series[i]
	}
	var sent int64
	batch := make([]remotewrite.Series, 0, o.MaxSamples)
	for n, t := range times {
		batch = batch[:0]
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			if err := o.send(ctx, snappy.Encode(nil, remotewrite.Marshal(batch, t)), t); err != nil {
				return err
			}
			sent += int64(len(batch))
			batch = batch[:0]
			return nil
		}
		for i, s := range series {
			if next[i] < len(s.Times) && s.Times[next[i]] == t {
				batch = append(batch, remotewrite.Series{Labels: labels[i], Value: Value(s.ID.Key.Fam, cur[i].at(t))})
				next[i]++
				if len(batch) == o.MaxSamples {
					if err := flush(); err != nil {
						return sent, err
					}
				}
			}
		}
		if err := flush(); err != nil {
			return sent, err
		}
		if o.Progress != nil {
			o.Progress(n+1, len(times))
		}
	}
	return sent, nil
}

// send makes one request, retrying what may pass later.
func (o PushOptions) send(ctx context.Context, body []byte, t int64) error {
	wait := o.MinBackoff
	for attempt := 0; ; attempt++ {
		status, msg, err := o.post(ctx, body)
		if err == nil {
			return nil
		}
		if status == http.StatusBadRequest && refusesOld(msg) {
			return fmt.Errorf("%w (sample time %s: %q): it must accept out-of-order samples: "+
				"in Prometheus set storage.tsdb.out_of_order_time_window in its configuration file "+
				"(Mimir: out_of_order_time_window) to more than the backfilled range, or write an OpenMetrics file "+
				"with --output and load it with promtool tsdb create-blocks-from openmetrics",
				ErrOldSamplesRefused, time.UnixMilli(t).UTC().Format(time.RFC3339), msg)
		}
		retry := status == 0 || status == http.StatusTooManyRequests || status >= 500
		if !retry || attempt >= o.Retries {
			return fmt.Errorf("remote-write: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// refusesOld reports whether a 400's message is a TSDB's refusal of old
// samples (Prometheus: "out of bounds", "too old sample", "out of order
// sample"; Mimir: "sample too old", "out of order").
func refusesOld(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"out of bounds", "too old", "out of order", "out-of-order"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func (o PushOptions) post(ctx context.Context, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.URL, bytes.NewReader(body))
	if err != nil {
		return http.StatusBadRequest, "", fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Content-Encoding", remotewrite.Encoding)
	req.Header.Set("Content-Type", remotewrite.ContentType)
	req.Header.Set(remotewrite.VersionKey, remotewrite.VersionValue)
	req.Header.Set("User-Agent", o.UserAgent)
	resp, err := o.Client.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap() // the error without the URL, which may hold a token
		}
		return 0, "", fmt.Errorf("sending: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, "", nil
	}
	msg := strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	status := resp.StatusCode
	if status/100 == 3 {
		status = http.StatusBadRequest
	}
	return status, msg, fmt.Errorf("receiver answered %s: %s", resp.Status, msg)
}
