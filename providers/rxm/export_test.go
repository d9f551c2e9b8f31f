package rxm

import "time"

// SetDefaultConnTimeout sets the connect timeout rxm uses over a core
// fabric without ConnTimeout, for fabrics opened until restore runs.
func SetDefaultConnTimeout(d time.Duration) (restore func()) {
	old := defaultConnTimeout
	defaultConnTimeout = d
	return func() { defaultConnTimeout = old }
}

// Ticks returns how many times blocked readers of rxm queues slept a
// tick rather than waiting on a core completion queue.
func Ticks() int64 { return ticks.Load() }
