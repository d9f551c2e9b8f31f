//go:build cgo && linux

package main

/*
#include <stdint.h>
*/
import "C"

import "runtime"

// gofabricAllocs returns how many heap objects the Go runtime of the
// library has allocated so far (runtime.MemStats.Mallocs): a diagnostic
// for C programs, which the tests use to check that data-transfer calls
// and queue reads allocate nothing. It stops the world for a moment.
//
// It reads runtime.ReadMemStats, not runtime/metrics'
// /gc/heap/allocs:objects: that count takes a P's allocations only when
// the P's cache hands a span back, so a garbage collection finishing
// between two reads adds allocations made long before them (the open
// calls' ~1800 objects showed up that way in a window of data-path
// calls that allocated nothing), and it leaves out tiny objects.
// ReadMemStats flushes every P's cache first.
//
//export gofabricAllocs
func gofabricAllocs() C.uint64_t {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return C.uint64_t(m.Mallocs)
}

// gofabricGoroutines returns the number of goroutines of the library's Go
// runtime (runtime.NumGoroutine): a diagnostic for C programs, which the
// tests use to check that closing every object ends every goroutine the
// objects started.
//
//export gofabricGoroutines
func gofabricGoroutines() C.int {
	return C.int(runtime.NumGoroutine())
}
