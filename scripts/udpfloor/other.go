//go:build !linux

package main

import (
	"fmt"
	"os"
	"runtime"
)

// main says why there is nothing to run: the floor measures Linux's system
// calls, as the providers it stands under make them.
func main() {
	fmt.Fprintf(os.Stderr, "udpfloor: Linux only (this is %s/%s)\n", runtime.GOOS, runtime.GOARCH)
	os.Exit(1)
}
