package ft

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// alphabet is the payload pattern of -v (integ_alphabet): a payload of n
// bytes is the first n bytes of the alphabet repeated.
const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// patternMu guards pattern, the alphabet repeated, grown on demand.
var (
	patternMu sync.Mutex
	pattern   []byte
)

// patternOf returns the first n bytes of the repeated alphabet.
func patternOf(n int) []byte {
	patternMu.Lock()
	defer patternMu.Unlock()
	for len(pattern) < n {
		pattern = append(pattern, alphabet...)
	}
	return pattern[:n]
}

// fillBuf writes the pattern into b (ft_fill_buf).
func fillBuf(b []byte) { copy(b, patternOf(len(b))) }

// checkBuf verifies that b holds the pattern (ft_check_buf). On a
// mismatch it prints C's message on stdout ("Data check error (x!=y) at
// byte N for buffer size M") and returns fi.EIO, as C does.
func (s *Session) checkBuf(b []byte) error {
	want := patternOf(len(b))
	if bytes.Equal(b, want) {
		return nil
	}
	i := 0
	for b[i] == want[i] {
		i++
	}
	// %c of C's char: the raw byte, not its UTF-8 form.
	line := fmt.Appendf(nil, "Data check error (%s!=%s) at byte %d for buffer size %d\n", []byte{want[i]}, []byte{b[i]}, i, len(b))
	_, _ = s.stdout.Write(line)
	return errors.Wrapf(fi.EIO, "data check: byte %d of a %d-byte payload is %q, the pattern has %q", i, len(b), b[i], want[i])
}
