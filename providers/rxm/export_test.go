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

// SetForceMRLocal makes endpoints opened until restore runs treat their
// core as FI_MR_LOCAL (verbs' path over tcp).
func SetForceMRLocal(on bool) (restore func()) {
	old := forceMRLocal
	forceMRLocal = on
	return func() { forceMRLocal = old }
}

// SARSent returns how many messages went in SAR segments.
func SARSent() int64 { return sarSent.Load() }
