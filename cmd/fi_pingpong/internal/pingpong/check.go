package pingpong

import (
	"fmt"

	"github.com/gofabric/gofabric/fi"
)

// alphabet is the 62 characters payloads are built from with -c.
const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// Pattern is fi_pingpong's -c data pattern: the k-th message a process
// sends (k counted from 0 over the whole run, all sizes) holds
// alphabet[(7k + i) mod 62] at byte i, and the k-th message it receives
// must hold the same. Fill and Verify keep independent counters, so two
// peers in lock-step verify each other's data, Go or C. The zero value
// starts at k = 0. Not safe for concurrent use.
type Pattern struct {
	fills, checks uint64
}

// Fill writes the next send's pattern into buf.
func (p *Pattern) Fill(buf []byte) {
	j := int(p.fills * 7 % uint64(len(alphabet)))
	p.fills++
	for i := range buf {
		buf[i] = alphabet[j]
		if j++; j == len(alphabet) {
			j = 0
		}
	}
}

// Verify checks buf, a received message, against the next receive's
// pattern; on the first wrong byte it returns a *CheckError.
func (p *Pattern) Verify(buf []byte) error {
	j := int(p.checks * 7 % uint64(len(alphabet)))
	p.checks++
	for i, b := range buf {
		if b != alphabet[j] {
			return &CheckError{Iteration: p.checks, Size: len(buf), Byte: i}
		}
		if j++; j == len(alphabet) {
			j = 0
		}
	}
	return nil
}

// CheckError is a -c verification failure. Its text is the line the C tool
// prints on stdout; the run exits with status 255. It unwraps to fi.EIO.
type CheckError struct {
	// Iteration is the receive counter after counting this message (from
	// 1, over the whole run).
	Iteration uint64
	// Size is the message size and Byte the index of the first bad byte.
	Size, Byte int
}

// Error returns "Error at iteration=<n> size=<size> byte=<index>".
func (e *CheckError) Error() string {
	return fmt.Sprintf("Error at iteration=%d size=%d byte=%d", e.Iteration, e.Size, e.Byte)
}

// Unwrap returns fi.EIO.
func (e *CheckError) Unwrap() error { return fi.EIO }
