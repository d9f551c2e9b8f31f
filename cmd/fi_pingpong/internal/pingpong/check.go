package pingpong

import (
	"bytes"
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

// twice is the alphabet twice: twice[j:j+len(alphabet)] is one period of
// the pattern that starts at alphabet[j].
const twice = alphabet + alphabet

// Fill writes the next send's pattern into buf. The pattern repeats every
// len(alphabet) bytes, so after the first period each copy doubles what
// is written: a few memmoves instead of a loop over every byte (which
// -race instruments byte by byte).
func (p *Pattern) Fill(buf []byte) {
	j := int(p.fills * 7 % uint64(len(alphabet)))
	p.fills++
	w := copy(buf, twice[j:j+len(alphabet)])
	for w < len(buf) {
		w += copy(buf[w:], buf[:w])
	}
}

// Verify checks buf, a received message, against the next receive's
// pattern; on the first wrong byte it returns a *CheckError. Once a
// prefix of whole periods holds the pattern, the next stretch of the same
// length must equal it, so it compares doubling stretches, and looks for
// the byte only when one differs.
func (p *Pattern) Verify(buf []byte) error {
	j := int(p.checks * 7 % uint64(len(alphabet)))
	p.checks++
	period := twice[j : j+len(alphabet)]
	w := min(len(buf), len(period))
	ok := string(buf[:w]) == period[:w]
	for ok && w < len(buf) {
		n := min(w, len(buf)-w)
		ok = bytes.Equal(buf[w:w+n], buf[:n])
		w += n
	}
	if ok {
		return nil
	}
	for i, b := range buf {
		if b != twice[j+i%len(alphabet)] {
			return &CheckError{Iteration: p.checks, Size: len(buf), Byte: i}
		}
	}
	return nil // not reached: a stretch differed
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
