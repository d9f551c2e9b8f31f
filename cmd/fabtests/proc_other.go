//go:build !linux

package main

import "os/exec"

// ownGroup leaves cmd as it is: outside Linux, cancellation kills only
// the process itself.
func ownGroup(*exec.Cmd) {}

// waitGroup waits for cmd.
func waitGroup(cmd *exec.Cmd) error { return cmd.Wait() }
