// Package exampletest checks that a package's examples clean up after
// themselves: the examples in this repository run against real providers,
// and a user copies them, so an object they forget to close is a leak
// the copy inherits.
package exampletest

import (
	"os"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// NoLeaks runs each example twice with its output discarded: once to warm
// up what a process sets up only once (the runtime's netpoller, a
// provider's once-per-process work), and again between two looks at the
// process's goroutines, file descriptors and mappings of shared memory
// files (/proc/self/fd and /proc/self/maps, where they exist). It fails t
// when the second run left any of them behind. go test
// checks the examples' output when it runs them as examples; NoLeaks
// checks only what they leave.
func NoLeaks(t *testing.T, examples ...func()) {
	t.Helper()
	run := func() {
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		stdout := os.Stdout
		os.Stdout = devnull
		defer func() {
			os.Stdout = stdout
			devnull.Close()
		}()
		for _, ex := range examples {
			ex()
		}
	}
	run()
	before, beforeMaps := fds(), shmMaps()
	ignore := goleak.IgnoreCurrent()
	run()
	goleak.VerifyNone(t, ignore)
	if after := shmMaps(); after > beforeMaps {
		t.Errorf("examples left %d mappings of /dev/shm files", after-beforeMaps)
	}
	// Close waits for what an object started (fi_close(3) in gofabric),
	// so every descriptor is closed by the time the examples return.
	var extra []string
	for fd, target := range fds() {
		if _, ok := before[fd]; !ok {
			extra = append(extra, fd+" -> "+target)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		t.Errorf("examples left %d file descriptors open: %v", len(extra), extra)
	}
}

// fds returns the process's open file descriptors and what each refers
// to, or nil where /proc/self/fd does not exist.
func fds() map[string]string {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	self, _ := os.Readlink("/proc/self")
	m := make(map[string]string, len(ents))
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		if target == "/proc/"+self+"/fd" {
			continue // ReadDir's own descriptor
		}
		m[e.Name()] = target
	}
	return m
}

// shmMaps counts the process's mappings of files under /dev/shm (the shm
// provider's regions), 0 where /proc/self/maps does not exist.
func shmMaps() int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), " /dev/shm/")
}
