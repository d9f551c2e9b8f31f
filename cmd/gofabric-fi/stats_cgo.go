//go:build cgo && linux

package main

/*
#include <stdint.h>
*/
import "C"

import (
	"runtime"
	"runtime/metrics"
	"sync"
)

// allocs reads the Go heap's allocation count.
var allocs struct {
	mu     sync.Mutex // guards sample
	sample []metrics.Sample
}

// gofabricAllocs returns how many heap objects the Go runtime of the
// library has allocated so far (runtime/metrics /gc/heap/allocs:objects):
// a diagnostic for C programs, which the tests use to check that
// data-transfer calls and queue reads allocate nothing.
//
//export gofabricAllocs
func gofabricAllocs() C.uint64_t {
	allocs.mu.Lock()
	defer allocs.mu.Unlock()
	if allocs.sample == nil {
		allocs.sample = []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	}
	metrics.Read(allocs.sample)
	return C.uint64_t(allocs.sample[0].Value.Uint64())
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
