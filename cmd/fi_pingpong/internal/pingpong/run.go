package pingpong

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// Transport is the fabric side of a run: one endpoint of the type the
// options name, reaching one peer, with one transmit and one receive
// buffer. The fabric implementation (NewFabricTransport) is built on
// gofabric's providers; tests plug in others. Methods are called from one
// goroutine, in the order Setup, Buffers / MaxMsgSize, Send and Recv any
// number of times, Finalize, Close (Close also after a failure anywhere).
type Transport interface {
	// Setup opens the endpoint and reaches the peer, exchanging endpoint
	// names over the control channel as the endpoint type needs
	// (docs/wire-tcp.md, §1.2), and leaves the first receive posted. For MSG
	// endpoints the server sends its passive endpoint's name, then accepts
	// the client's connection; for RDM and DGRAM endpoints the server
	// sends its name first, then receives the client's.
	Setup(ctx context.Context, c *Config) error
	// MaxMsgSize is the endpoint's maximum message size (0: no maximum).
	MaxMsgSize() int
	// Buffers returns the data buffers, both RxSize long: Send sends from
	// tx, Recv receives into rx.
	Buffers() (tx, rx []byte)
	// Send sends tx[:n] as one message and waits for its send completion,
	// or injects it (no completion) when n is below the inject size.
	Send(n int) error
	// Recv waits for one receive completion; then, while rx still holds
	// the message, calls check with its length (unless check is nil) and
	// returns check's error as it is; then posts the receive again and
	// returns the length. C's pp_rx has this order: the buffer is checked
	// before the provider may write into it again.
	Recv(check func(n int) error) (int, error)
	// Finalize sends the 4-byte "fin\0" message with transmit-complete
	// semantics, waits for its completion, then for the peer's "fin".
	Finalize() error
	// Close shuts a connection down and releases everything Setup opened.
	Close() error
}

// Config is what a Transport's Setup gets.
type Config struct {
	Options *Options
	// Ctrl is the connected control channel.
	Ctrl *Ctrl
	// Debugf prints a -v trace line; it does nothing without -v.
	Debugf func(format string, args ...any)
}

// Main runs fi_pingpong with args (without the program name), writing the
// result table to stdout and diagnostics to stderr, and returns the exit
// status: 0 on success, 1 for a bad command line, 255 for a -c data
// mismatch, else the errno of the failure, as the C tool.
func Main(args []string, stdout, stderr io.Writer) int {
	o, err := ParseOptions(args, stderr)
	if err != nil {
		printHints(stderr, err)
		return ExitStatus(err)
	}
	err = Run(context.Background(), o, NewFabricTransport(), stdout, stderr)
	report(err, stdout, stderr)
	return ExitStatus(err)
}

// report prints a run's error: a data mismatch on stdout as C does, any
// other error on stderr followed by its hints.
func report(err error, stdout, stderr io.Writer) {
	var ce *CheckError
	switch {
	case err == nil:
	case errors.As(err, &ce):
		fmt.Fprintln(stdout, ce.Error())
	default:
		fmt.Fprintf(stderr, "[error] %v\n", err)
		printHints(stderr, err)
	}
}

// printHints prints the hints of err (cockroachdb/errors' WithHint), and
// of the errors behind a NoMatchError's reasons, one "hint: " line each.
func printHints(w io.Writer, err error) {
	hints := errors.GetAllHints(err)
	var nm *fi.NoMatchError
	if errors.As(err, &nm) {
		for _, r := range nm.Reasons {
			if r.Err != nil {
				hints = append(hints, errors.GetAllHints(r.Err)...)
			}
		}
	}
	var seen []string
	for _, h := range hints {
		if slices.Contains(seen, h) {
			continue
		}
		seen = append(seen, h)
		fmt.Fprintf(w, "hint: %s\n", strings.ReplaceAll(h, "\n", "\n      "))
	}
}

// Run opens the control channel (the server listens on o.SrcPort and
// accepts one client; the client connects to o.Server:o.DstPort, giving up
// after o.Timeout) and runs the test over it with t (RunCtrl), every
// control message bounded by o.Timeout.
func Run(ctx context.Context, o *Options, t Transport, stdout, stderr io.Writer) error {
	dbg := debugf(o, stderr)
	var (
		c   *Ctrl
		err error
	)
	if o.IsClient() {
		dbg("client: connecting to %s port %d", o.Server, o.DstPort)
		dctx, cancel := ctx, context.CancelFunc(func() {})
		if o.Timeout > 0 {
			dctx, cancel = context.WithTimeout(ctx, o.Timeout)
		}
		c, err = DialCtrl(dctx, o.Server, o.DstPort, o.SrcPort, o.IPv6)
		cancel()
		switch fi.Code(err) {
		case fi.ETIMEDOUT:
			err = errors.WithHintf(err, "nothing answered within %v (-T sets how long to wait)", o.Timeout)
		case fi.ECONNREFUSED:
			err = errors.WithHintf(err, "start the server first: fi_pingpong with the same options and no address (-B %d to listen on this port)", o.DstPort)
		}
	} else {
		dbg("server: waiting for a connection on port %d", o.SrcPort)
		c, err = ListenCtrl(ctx, o.SrcPort, o.IPv6, nil)
	}
	if err != nil {
		return err
	}
	c.SetTimeout(o.Timeout)
	dbg("control channel connected")
	return RunCtrl(ctx, o, c, t, stdout, stderr)
}

// RunCtrl runs fi_pingpong's test over the control channel c, which it
// closes, and transport t: Setup, then for each size of Sizes a control
// sync, Iterations timed ping-pongs (the client sends first; with -c every
// payload is filled and verified), the count exchange and one table row on
// stdout, then Finalize, closing c, and Close.
func RunCtrl(ctx context.Context, o *Options, c *Ctrl, t Transport, stdout, stderr io.Writer) (err error) {
	dbg := debugf(o, stderr)
	ctrlOpen := true
	defer func() {
		if ctrlOpen {
			c.Close()
		}
		if cerr := t.Close(); err == nil && cerr != nil {
			err = errors.Wrap(cerr, "pingpong: close")
		}
	}()
	if err := t.Setup(ctx, &Config{Options: o, Ctrl: c, Debugf: dbg}); err != nil {
		return err
	}
	sizes := Sizes(o, t.MaxMsgSize())
	dbg("%d sizes to test", len(sizes))
	tx, rx := t.Buffers()
	var pat Pattern
	tab := table{w: stdout}
	for _, size := range sizes {
		if err := c.Sync(); err != nil {
			return err
		}
		dbg("size %d: synced", size)
		count, elapsed, err := pingpong(o, t, &pat, tx[:size], rx[:size])
		if err != nil {
			return err
		}
		acked, err := c.ExchangeCount(count)
		if err != nil {
			return err
		}
		dbg("size %d: %d received, %d acknowledged", size, count, acked)
		tab.row(size, o.Iterations, acked, elapsed)
	}
	if err := t.Finalize(); err != nil {
		return err
	}
	dbg("finalized")
	ctrlOpen = false
	if err := c.Close(); err != nil {
		return sockErr(err, "pingpong: ctrl: close")
	}
	return nil
}

// pingpong runs one size's timed loop and returns the number of receive
// completions and the elapsed time.
func pingpong(o *Options, t Transport, pat *Pattern, tx, rx []byte) (count int, elapsed time.Duration, err error) {
	size := len(tx)
	var check func(int) error
	if o.Check {
		check = func(int) error { return pat.Verify(rx) }
	}
	recv := func() error {
		if _, err := t.Recv(check); err != nil {
			return err
		}
		count++
		return nil
	}
	send := func() error {
		if o.Check {
			pat.Fill(tx)
		}
		return t.Send(size)
	}
	// The loop keeps its thread. The runtime preempts a goroutine that
	// has run for 10 ms; with a processor idle, the preempted goroutine
	// may resume on another thread, which the kernel can wake on the CPU
	// where the peer polls. Traced on two CPUs (udp 64 B): both pollers
	// shared one CPU in slices of milliseconds for 20 ms while the other
	// sat idle. In 12 runs of 20,000 round trips, the blocks of 100 that
	// took over twice the median added 3 to 27% to the run, once 49%;
	// locked, 0 to 5%. C's tool runs on one thread: there is no other
	// thread to resume it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	for range o.Iterations {
		if o.IsClient() {
			if err := send(); err != nil {
				return count, 0, err
			}
			if err := recv(); err != nil {
				return count, 0, err
			}
			continue
		}
		if err := recv(); err != nil {
			return count, 0, err
		}
		if err := send(); err != nil {
			return count, 0, err
		}
	}
	return count, time.Since(start), nil
}

// debugf returns the -v trace printer.
func debugf(o *Options, stderr io.Writer) func(string, ...any) {
	if !o.Verbose {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) {
		fmt.Fprintf(stderr, "[debug] "+format+"\n", args...)
	}
}
