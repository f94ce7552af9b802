package otlp

import "time"

// Previous remembers one sender's last pushed value of every cumulative
// series, so that a series that went down between two pushes (a counter
// that counts again from zero) gets a new start time. Each sender has its
// own: senders push at different times, and a shared record would take
// one sender's older gather for a drop. Not safe for concurrent use; a
// sender's pushes do not overlap.
type Previous struct {
	at         time.Time          // time of the last push's points
	last, next map[uint64]float64 // series hash → value
}

// NewPrevious returns an empty record: nothing is compared on the first
// push.
func NewPrevious() *Previous {
	return &Previous{last: map[uint64]float64{}, next: map[uint64]float64{}}
}

// done makes the values of the push at now the ones the next compares
// with; series absent from it are forgotten.
func (p *Previous) done(now time.Time) {
	p.last, p.next = p.next, p.last
	clear(p.next)
	p.at = now
}
