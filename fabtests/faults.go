package fabtests

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// The faults group: the robustness contract of a provider run through a
// fault-injecting hook layer (libfabric's hook providers), for connected
// (FI_EP_MSG) and reliable unconnected (FI_EP_RDM) endpoints. Every
// operation ends in a completion or an error entry, none hangs, none is
// delivered corrupted; with Config.Faults unset every message arrives
// once, intact and in order.

const (
	// faultMsgs is the number of messages a run sends.
	faultMsgs = 200
	// faultQuiet is how long the receiver must see no new entry, once
	// every send has ended, before a run with faults stops waiting for
	// messages that were lost.
	faultQuiet = 300 * time.Millisecond
	// faultBig is the body size of the largest messages.
	faultBig = 64 << 10
	// faultWindow bounds the receives posted at once.
	faultWindow = 64
)

// faultSend is a send's context: its sequence number. faultRecv is a
// receive's context: the receive's index in posting order.
type (
	faultSend int
	faultRecv int
)

// testFaults runs the faults group.
func testFaults(t *testing.T, s *suite) {
	s.run(t, "every-op-ends", func(t *testing.T) {
		s.endpointKinds(t, func(t *testing.T, open func(t *testing.T) *duo) {
			f := newFaultRun(t, s, open(t))
			f.exchange(t)
			f.closeReceiver(t)
			f.report(t)
		})
	})
}

// faultRun is one run of the faults group: d.a sends faultMsgs numbered
// messages to d.b, which receives them into a pool of buffers.
type faultRun struct {
	s      *suite
	d      *duo
	ma, mb ep.Msg
	faults bool
	// sent[seq] is message seq: the 8-byte little-endian seq, then
	// faultPattern's bytes; sdesc[seq] its local descriptor.
	sent  [][]byte
	sdesc []any
	// sendEnded[seq] says send seq has its outcome: a completion, an
	// error entry, or an error returned by Send.
	sendEnded          []bool
	sendsEnded, sendOK int
	// slots are the receive buffers, free the slots not posted, posted
	// the slot of each receive not ended yet.
	slots    [][]byte
	slotDesc []any
	free     []int
	posted   map[faultRecv]int
	// nPosted counts the receives posted, up to maxRecvs; stopPosting is
	// set once Recv failed or the receiver closed.
	nPosted, maxRecvs int
	stopPosting       bool
	closed            bool
	// count[seq] is how often message seq was received; got lists the
	// successful receives' sequence numbers in completion order.
	count           []int
	got             []int
	distinct, maxSq int
	// placed[k] is the message receive k holds; strict says completions
	// come in message order (FI_ORDER_STRICT completion order), else
	// order is checked by the receives messages land in (FI_ORDER_SAS
	// matching: a later message never lands in an earlier receive).
	placed   map[faultRecv]int
	strict   bool
	recvErrs map[fi.Errno]int
	// last is when the receiver last had an entry or a send last ended.
	last time.Time
}

// newFaultRun prepares the messages and the receive buffers.
func newFaultRun(t *testing.T, s *suite, d *duo) *faultRun {
	f := &faultRun{s: s, d: d, ma: msgOf(t, d.a), mb: msgOf(t, d.b), faults: s.cfg.Faults,
		posted: map[faultRecv]int{}, count: make([]int, faultMsgs), maxSq: -1, placed: map[faultRecv]int{},
		recvErrs: map[fi.Errno]int{}, last: time.Now()}
	f.strict = d.b.info.RxAttr != nil && d.b.info.RxAttr.CompOrder&fi.OrderStrict != 0
	big := faultBig
	for _, x := range []*peer{d.a, d.b} {
		if m := x.info.EPAttr.MaxMsgSize; m > 0 {
			big = min(big, m-8)
		}
	}
	require.GreaterOrEqual(t, big, 0, "max_msg_size below the 8-byte sequence number")
	rng := rand.New(rand.NewPCG(6, faultMsgs))
	for seq := range faultMsgs {
		var n int
		switch seq % 50 {
		case 17:
			n = 0
		case 33:
			n = big
		default:
			n = min(1+rng.IntN(4096), big)
		}
		buf := make([]byte, 8+n)
		binary.LittleEndian.PutUint64(buf, uint64(seq))
		faultPattern(buf[8:], uint64(seq))
		f.sent = append(f.sent, buf)
		f.sdesc = append(f.sdesc, d.a.desc(t, buf))
	}
	f.sendEnded = make([]bool, faultMsgs)
	// Each message may arrive twice where faults are injected: post
	// receives enough for duplicates too, so that no sender waits for a
	// receive that never comes.
	f.maxRecvs = faultMsgs
	if f.faults {
		f.maxRecvs *= 2
	}
	window := faultWindow
	if n := d.b.info.RxAttr.Size; n > 0 {
		window = min(window, n)
	}
	for i := range window {
		buf := make([]byte, 8+big)
		f.slots = append(f.slots, buf)
		f.slotDesc = append(f.slotDesc, d.b.desc(t, buf))
		f.free = append(f.free, i)
	}
	return f
}

// faultPattern fills b with bytes derived from seq (xorshift64).
func faultPattern(b []byte, seq uint64) {
	x := seq*0x9e3779b97f4a7c15 | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
}

// exchange posts every send, keeping receives posted, and polls until
// every send has ended and the receiver has every message or, with
// faults, has been quiet for faultQuiet; all within Config.Timeout.
func (f *faultRun) exchange(t *testing.T) {
	ctx := f.s.ctx(t)
	f.postRecvs(t)
	for seq := 0; seq < faultMsgs; {
		err := f.ma.Send(f.sent[seq], f.sdesc[seq], f.d.dest, faultSend(seq))
		switch {
		case err == nil:
			seq++
		case errors.Is(err, fi.EAGAIN):
		default:
			if !f.faults {
				t.Fatalf("send %d of %d bytes: %v", seq, len(f.sent[seq]), err)
			}
			requireCoded(t, err)
			f.endSend(t, seq)
			seq++
		}
		f.progress(t)
		if ctx.Err() != nil {
			t.Fatalf("hung operations: still posting send %d after %v: %s", seq, f.s.cfg.Timeout, f.pending())
		}
	}
	for {
		f.progress(t)
		if f.sendsEnded == faultMsgs {
			if f.distinct == faultMsgs || f.faults && time.Since(f.last) >= faultQuiet {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("hung operations after %v: %s", f.s.cfg.Timeout, f.pending())
		}
		runtime.Gosched()
	}
}

// closeReceiver closes the receiving endpoint and requires every receive
// still posted to end, within Config.Timeout.
func (f *faultRun) closeReceiver(t *testing.T) {
	f.closed = true
	require.NoError(t, f.d.b.ep.Close(), "close the receiving endpoint")
	ctx := f.s.ctx(t)
	for len(f.posted) > 0 {
		f.progress(t)
		if ctx.Err() != nil {
			t.Fatalf("hung operations: %v after the receiving endpoint closed: %s", f.s.cfg.Timeout, f.pending())
		}
		runtime.Gosched()
	}
}

// report checks what only the whole run shows and logs the outcome.
func (f *faultRun) report(t *testing.T) {
	t.Logf("%d sends: %d completed, %d failed; %d receives: %d delivered (%d distinct), error entries %v",
		faultMsgs, f.sendOK, f.sendsEnded-f.sendOK, f.nPosted, len(f.got), f.distinct, f.recvErrs)
	if !f.faults {
		require.Equal(t, faultMsgs, f.sendOK, "sends that succeeded")
		require.Equal(t, faultMsgs, len(f.got), "messages delivered")
	}
}

// progress polls both sides, handles their entries and posts receives.
func (f *faultRun) progress(t *testing.T) {
	a, b := f.d.a, f.d.b
	a.poll(t)
	b.poll(t)
	for _, e := range a.got {
		ctx := e.c.Context
		if e.err != nil {
			ctx = e.err.Context
		}
		seq, ok := ctx.(faultSend)
		if !ok || seq < 0 || seq >= faultMsgs {
			t.Fatalf("sender: entry with context %v (%T) that no send was posted with", ctx, ctx)
		}
		if e.err != nil {
			f.requireErrEntry(t, "send", int(seq), e.err.Err, f.faults)
		} else {
			f.sendOK++
		}
		f.endSend(t, int(seq))
	}
	a.got = a.got[:0]
	for _, e := range b.got {
		f.recvEntry(t, e)
	}
	b.got = b.got[:0]
	f.postRecvs(t)
}

// endSend records send seq's outcome.
func (f *faultRun) endSend(t *testing.T, seq int) {
	if f.sendEnded[seq] {
		t.Fatalf("send %d ended twice", seq)
	}
	f.sendEnded[seq] = true
	f.sendsEnded++
	f.last = time.Now()
}

// requireErrEntry checks an error entry of op n: allowed when ok, and
// carrying an fi.Errno.
func (f *faultRun) requireErrEntry(t *testing.T, op string, n int, code fi.Errno, ok bool) {
	t.Helper()
	if !ok {
		t.Fatalf("%s %d ended with an error entry without faults injected: %v", op, n, code)
	}
	if code == 0 || code == fi.EOTHER {
		t.Fatalf("%s %d: error entry without an fi.Errno: %v", op, n, code)
	}
}

// recvEntry handles one entry of the receiver: it frees the receive's
// slot and checks the message against what was sent.
func (f *faultRun) recvEntry(t *testing.T, e cqEntry) {
	ctx := e.c.Context
	if e.err != nil {
		ctx = e.err.Context
	}
	k, ok := ctx.(faultRecv)
	slot, posted := f.posted[k]
	if !ok || !posted {
		t.Fatalf("receiver: entry with context %v (%T) that no pending receive has", ctx, ctx)
	}
	delete(f.posted, k)
	f.free = append(f.free, slot)
	f.last = time.Now()
	if e.err != nil {
		f.requireErrEntry(t, "receive", int(k), e.err.Err, f.faults || f.closed)
		f.recvErrs[e.err.Err]++
		return
	}
	buf := f.slots[slot]
	if e.c.Len < 8 || e.c.Len > len(buf) {
		t.Fatalf("delivered corrupted: receive %d of %d bytes into a buffer of %d (every message has 8 to %d)",
			k, e.c.Len, len(buf), len(buf))
	}
	data := buf[:e.c.Len]
	seq := binary.LittleEndian.Uint64(data)
	if seq >= faultMsgs {
		t.Fatalf("delivered corrupted: receive %d holds sequence number %d, only 0 to %d were sent", k, seq, faultMsgs-1)
	}
	if want := f.sent[seq]; !bytes.Equal(want, data) {
		t.Fatalf("delivered corrupted: receive %d holds message %d with %d bytes, %d were sent%s",
			k, seq, len(data), len(want), firstDiff(want, data))
	}
	n := int(seq)
	f.count[n]++
	f.got = append(f.got, n)
	switch {
	case f.count[n] > 2:
		t.Fatalf("message %d received %d times", n, f.count[n])
	case f.count[n] == 2 && !f.faults:
		t.Fatalf("message %d received twice without faults injected", n)
	case f.count[n] == 2:
	case f.strict && !f.faults && n != f.distinct:
		t.Fatalf("message %d arrived after %d others: without faults every message arrives once, in order", n, f.distinct)
	case f.strict && n < f.maxSq:
		t.Fatalf("message %d arrived after message %d: order is kept even where faults are injected", n, f.maxSq)
	case !f.strict:
		for k2, n2 := range f.placed {
			if (k2 < k) != (n2 < n) {
				t.Fatalf("message %d landed in receive %d, message %d in receive %d: messages match receives in order (FI_ORDER_SAS)", n, k, n2, k2)
			}
		}
		f.placed[k] = n
		f.distinct++
	default:
		f.distinct++
		f.maxSq = n
	}
}

// firstDiff describes the first byte where got differs from want.
func firstDiff(want, got []byte) string {
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			return fmt.Sprintf(", first difference at byte %d: %#02x, want %#02x", i, got[i], want[i])
		}
	}
	return ""
}

// postRecvs posts receives into free slots until maxRecvs were posted,
// the provider says fi.EAGAIN, or posting stopped.
func (f *faultRun) postRecvs(t *testing.T) {
	for !f.closed && !f.stopPosting && len(f.free) > 0 && f.nPosted < f.maxRecvs {
		slot := f.free[len(f.free)-1]
		k := faultRecv(f.nPosted)
		err := f.mb.Recv(f.slots[slot], f.slotDesc[slot], fi.AddrUnspec, k)
		if errors.Is(err, fi.EAGAIN) {
			return
		}
		if err != nil {
			// A receive the provider refuses has its outcome at once;
			// where faults cut the connection no later one will do better.
			if !f.faults {
				t.Fatalf("post receive %d: %v", k, err)
			}
			requireCoded(t, err)
			f.stopPosting = true
			return
		}
		f.free = f.free[:len(f.free)-1]
		f.posted[k] = slot
		f.nPosted++
	}
}

// pending describes the operations without an outcome, for failures.
func (f *faultRun) pending() string {
	var sends []int
	for seq, ended := range f.sendEnded {
		if !ended {
			sends = append(sends, seq)
		}
	}
	more := ""
	if len(sends) > 10 {
		sends, more = sends[:10], " and more"
	}
	return fmt.Sprintf("%d of %d sends without an outcome %v%s; %d receives posted and not ended; %d of %d messages received",
		faultMsgs-f.sendsEnded, faultMsgs, sends, more, len(f.posted), f.distinct, faultMsgs)
}
