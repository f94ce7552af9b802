package api

import (
	"context"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
)

// budget is the request budget: a token bucket of perMinute requests a
// minute, shared by every endpoint. A request over it waits its turn
// (in the order asked) rather than fails.
type budget struct {
	clk   clock.Clock
	rate  float64 // requests a second
	burst float64

	mu     sync.Mutex
	tokens float64 // below zero: requests already promised a later turn
	last   time.Time
}

// newBudget allows perMinute requests a minute, in bursts of up to a
// tenth of that (at least one): a steady pace, not a minute's worth at
// once.
func newBudget(clk clock.Clock, perMinute int) *budget {
	perMinute = max(perMinute, 1)
	burst := max(float64(perMinute)/10, 1)
	return &budget{clk: clk, rate: float64(perMinute) / 60, burst: burst, tokens: burst, last: clk.Now()}
}

// wait takes one request's turn, waiting for it; ctx ends the wait (and
// gives the turn back).
func (b *budget) wait(ctx context.Context) error {
	b.mu.Lock()
	now := b.clk.Now()
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	b.tokens--
	deficit := -b.tokens
	b.mu.Unlock()
	if deficit <= 0 {
		return ctx.Err()
	}
	d := time.Duration(deficit / b.rate * float64(time.Second))
	if err := sleep(ctx, b.clk, d); err != nil {
		b.mu.Lock()
		b.tokens++
		b.mu.Unlock()
		return err
	}
	return nil
}

// sleep waits d on clk, or until ctx ends.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
