package api

import (
	"sync"
)

// recorder keeps what the client's hooks were told.
type recorder struct {
	mu        sync.Mutex
	requests  map[[2]string]int
	bytes     map[string]int64
	anomalies map[[2]string]int
}

func newRecorder() *recorder {
	return &recorder{requests: map[[2]string]int{}, bytes: map[string]int64{}, anomalies: map[[2]string]int{}}
}

func (r *recorder) hooks() Hooks {
	return Hooks{
		Request: func(e, code string) { r.mu.Lock(); r.requests[[2]string{e, code}]++; r.mu.Unlock() },
		Bytes:   func(e string, n int64) { r.mu.Lock(); r.bytes[e] += n; r.mu.Unlock() },
		Anomaly: func(e, reason string, n int) { r.mu.Lock(); r.anomalies[[2]string{e, reason}] += n; r.mu.Unlock() },
	}
}

func (r *recorder) anomaly(endpoint, reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.anomalies[[2]string{endpoint, reason}]
}

func (r *recorder) request(endpoint, code string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[[2]string{endpoint, code}]
}

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.requests {
		n += c
	}
	return n
}
