package ft

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// What the functional programs (functional/*.c) share beyond the
// benchmarks' machinery: the greeting of fi_msg, fi_rdm and fi_dgram
// (ft_send_greeting, ft_recv_greeting, check_recv_msg), their usages,
// optstrings that name a letter twice, reading one completion of a given
// operation (ft_cq_read_verify) and the 4-byte socket sync of fi_cm_data
// (ft_sock_sync).

// greeting is the message a client sends a server (shared.c's greeting);
// it travels with its terminating NUL.
const greeting = "Hello from Client!"

// uniqueOpts returns optstring without the letters it names a second
// time, with their colons: the C mains build optstrings from groups that
// overlap ("CM:h" CS_OPTS INFO_OPTS names -C and -M twice), and glibc's
// getopt takes a letter's first occurrence.
func uniqueOpts(optstring string) string {
	var b strings.Builder
	seen := map[byte]bool{}
	for i := 0; i < len(optstring); i++ {
		c := optstring[i]
		n := 1
		for i+n < len(optstring) && optstring[i+n] == ':' && n < 3 {
			n++
		}
		if !seen[c] {
			seen[c] = true
			b.WriteString(optstring[i : i+n])
		}
		i += n - 1
	}
	return b.String()
}

// functionalUsage prints the option lines of a functional program whose C
// main prints ft_usage (cs false) or ft_csusage (cs true), then extra (the
// program's own lines) and the long options ft takes.
func functionalUsage(cs bool, extra func(w io.Writer)) func(w io.Writer) {
	return func(w io.Writer) {
		usageCommon(w)
		if cs {
			usageCS(w)
		}
		if extra != nil {
			extra(w)
		}
		usageLong(w)
	}
}

// sendGreeting sends the greeting, NUL included, and waits for the send's
// completion (ft_send_greeting).
func (s *Session) sendGreeting() error {
	fmt.Fprintln(s.stdout, "Sending message...")
	n := len(greeting) + 1
	if n > s.txSize {
		return errors.Wrapf(fi.ETOOSMALL, "Transmit buffer too small: %d bytes for a %d-byte greeting", s.txSize, n)
	}
	copy(s.txBuf[s.txPrefix:], greeting+"\x00")
	if err := s.tx(n); err != nil {
		return err
	}
	fmt.Fprintln(s.stdout, "Send completion received")
	return nil
}

// recvGreeting waits for the client's greeting and checks it
// (ft_recv_greeting).
func (s *Session) recvGreeting() error {
	fmt.Fprintln(s.stdout, "Waiting for message from client...")
	if err := s.getRxComp(s.rxSeq, anyLength); err != nil {
		return err
	}
	got, err := s.checkRecvMsg(greeting)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "Received data from client: %s\n", got)
	return nil
}

// sendRecvGreeting is ft_send_recv_greeting: the client sends, the server
// receives.
func (s *Session) sendRecvGreeting() error {
	if s.opts.IsClient() {
		return s.sendGreeting()
	}
	return s.recvGreeting()
}

// checkRecvMsg checks that the receive buffer holds want as a
// NUL-terminated string (check_recv_msg), prints "Data check OK" and
// returns the string. C reads the string up to its NUL wherever that
// is; ft looks for it within the bytes received (the completion's length,
// or the whole buffer when a counter counted the receive or RMA wrote
// it), so a peer that sends no NUL gets the length error, not a read past
// the buffer. Both errors exit 1 as C's -1 does.
func (s *Session) checkRecvMsg(want string) (string, error) {
	b := s.rxBuf[s.rxPrefix:]
	if s.lastRxLen >= 0 && s.lastRxLen <= len(b) {
		b = b[:s.lastRxLen]
	}
	i := bytes.IndexByte(b, 0)
	if i != len(want) {
		got := len(b)
		if i >= 0 {
			got = i
		}
		fmt.Fprintln(s.stderr, "Received length does not match expected length.")
		return "", errors.Wrapf(fi.EOTHER, "received a %d-byte string (%q) where %q has %d bytes", got, b[:min(got, 64)], want, len(want))
	}
	if string(b[:i]) != want {
		fmt.Fprintln(s.stderr, "Received message does not match expected message.")
		return "", errors.Wrapf(fi.EOTHER, "received %q where the peer should send %q", b[:i], want)
	}
	fmt.Fprintln(s.stdout, "Data check OK")
	return want, nil
}

// readOneComp reads the next completion of cq into s.comp[0], busy
// polling as ft_cq_read_verify does (or blocking with -c sread), for at
// most timeout (0: no bound); an error entry is read and returned.
func (s *Session) readOneComp(cq eq.CompletionQueue, timeout time.Duration, what string) error {
	var cur uint64
	err := s.getCQComp(cq, &cur, 1, false, anyLength, timeout)
	if err != nil {
		return errors.Wrapf(err, "waiting for the %s completion", what)
	}
	return nil
}

// verifyComp is the check of ft_cq_read_verify on the completion just
// read: its context must be ctx, and a receive's tag, for tagged
// programs, must be tag.
func (s *Session) verifyComp(ctx any, rx bool, tag uint64) error {
	c := &s.comp[0]
	if c.Context != ctx {
		fmt.Fprintf(s.stderr, "ERROR: op ctx=%v cq_ctx=%v\n", ctx, c.Context)
		return errors.Wrapf(fi.EOTHER, "a completion came with the context %v where the test waits for %v", c.Context, ctx)
	}
	if rx && s.isTagged() && c.Tag != tag {
		return errors.Wrapf(fi.EOTHER, "Tag mismatch!. Expected: %d, actual: %d", tag, c.Tag)
	}
	return nil
}

// sockSync is ft_sock_sync: a 4-byte integer over sock, the client's
// first; it returns the peer's, which the caller checks is 0.
func (s *Session) sockSync(sock *oobSock, value int32) (int32, error) {
	var out, in [4]byte
	binary.NativeEndian.PutUint32(out[:], uint32(value))
	if s.opts.IsClient() {
		if err := sock.send(out[:]); err != nil {
			return 0, errors.Wrap(err, "ft_sock_sync")
		}
		if err := sock.recv(in[:]); err != nil {
			return 0, errors.Wrap(err, "ft_sock_sync")
		}
	} else {
		if err := sock.recv(in[:]); err != nil {
			return 0, errors.Wrap(err, "ft_sock_sync")
		}
		if err := sock.send(out[:]); err != nil {
			return 0, errors.Wrap(err, "ft_sock_sync")
		}
	}
	return int32(binary.NativeEndian.Uint32(in[:])), nil
}

// freeRes closes what a run opened, as ft_free_res does, but keeps the
// out-of-band socket (C's ft_free_res leaves it open, which lets
// fi_rdm_multi_client's clients share one), and forgets the buffers, the
// sequence numbers and the peer so that the Session can set up again.
func (s *Session) freeRes() error {
	oob := s.oob
	s.oob = nil
	err := s.close()
	s.oob = oob
	s.info, s.pepInfo = nil, nil
	s.msg, s.tagged, s.cm = nil, nil, nil
	s.mrDesc = nil
	s.buf, s.rxBuf, s.txBuf = nil, nil, nil
	s.txSize, s.rxSize, s.txPrefix, s.rxPrefix = 0, 0, 0, 0
	s.txSeq, s.rxSeq, s.txCQCntr, s.rxCQCntr = 0, 0, 0, 0
	s.remote = fi.AddrUnspec
	// close canceled the wait context for good; the next wait makes a
	// new one.
	s.waitCtx, s.waitCancel, s.waitTimer = nil, nil, nil
	return err
}
