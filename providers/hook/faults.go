package hook

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Message faults. When Faults asks for any, the hook's endpoints send
// every message (ep.Msg's calls) as a frame: the payload and an 8-byte
// trailer, a magic word and the payload's CRC-32C. From a seeded source
// it then drops some frames (the send completes as if delivered),
// delays some (they and every later message wait, so order holds),
// sends some twice, corrupts some (one payload byte flipped after the
// checksum), and cuts some connections (fi_shutdown before the message).
// The receiving hook checks each frame and hands a corrupted one to the
// application as an fi.EIO error entry, never as data: whatever the
// faults, every operation ends in a completion or an error entry, and
// nothing arrives corrupted. Tagged messages and RMA pass through
// unchanged. Frames are built in fresh buffers: the hook is a testing
// tool, and its data path allocates.

const (
	trailerLen   = 8
	trailerMagic = 0x686f6f6b // "hook"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// faulty reports whether f injects message faults.
func (f Faults) faulty() bool {
	return f.Drop > 0 || f.Delay > 0 || f.Duplicate > 0 || f.Corrupt > 0 || f.Cut > 0
}

// sendRec is the inner context of a framed send.
type sendRec struct {
	ctx    any
	report bool // false for injects: no completion reaches the application
	frame  []byte
}

// dupRec is the inner context of a duplicate, whose completion nobody
// sees.
type dupRec struct{ frame []byte }

// recvRec is the inner context of a receive posted through the hook.
type recvRec struct {
	ctx any
	iov [][]byte
	buf []byte // the frame's room: the application's bytes and a trailer
}

// delayed is a frame waiting for its time; fail reports a send the
// inner endpoint refused when its time came.
type delayed struct {
	at   time.Time
	send func() error
	fail func(error)
}

// faultMsg is ep.Msg through the faults: framing, drops, delays,
// duplicates, corruption and cut connections.
type faultMsg struct {
	inner ep.Msg
	e     fi.Fid // the inner endpoint, for Shutdown
	h     *hooks

	mu    sync.Mutex // guards queue and txcq
	queue []delayed
	// txcq is the hook CQ bound for sends, where dropped sends complete.
	txcq *completionQueue
}

// roll draws whether a fault of probability p happens.
func (h *hooks) roll(p float64) bool {
	if p <= 0 {
		return false
	}
	h.rngMu.Lock()
	defer h.rngMu.Unlock()
	if h.rng == nil {
		h.rng = rand.New(rand.NewPCG(h.f.Seed, h.f.Seed^0x9e3779b97f4a7c15))
	}
	return h.rng.Float64() < p
}

// frame builds the frame of the segments.
func frame(iov [][]byte) []byte {
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	f := make([]byte, 0, n+trailerLen)
	for _, b := range iov {
		f = append(f, b...)
	}
	f = binary.LittleEndian.AppendUint32(f, trailerMagic)
	return binary.LittleEndian.AppendUint32(f, crc32.Checksum(f[:n], castagnoli))
}

// send sends one message through the faults; post sends a frame with an
// inner context.
func (m *faultMsg) send(iov [][]byte, ctx any, report bool, post func(frame []byte, ictx any) error) error {
	h := m.h
	if cm, ok := m.e.(ep.CM); ok && h.roll(h.f.Cut) {
		_ = cm.Shutdown(0)
	}
	f := frame(iov)
	rec := &sendRec{ctx: ctx, report: report, frame: f}
	if h.roll(h.f.Drop) {
		m.mu.Lock()
		cq := m.txcq
		m.mu.Unlock()
		if report && cq != nil {
			cq.inject(eq.Completion{Context: ctx, Flags: fi.FlagSend | fi.FlagMsg})
		}
		return nil
	}
	out := f
	if len(f) > trailerLen && h.roll(h.f.Corrupt) {
		out = append([]byte(nil), f...)
		out[int(h.f.Seed%uint64(len(f)-trailerLen))] ^= 0x5a
		rec.frame = out
	}
	do := func() error {
		if err := post(out, rec); err != nil {
			return err
		}
		if h.roll(h.f.Duplicate) {
			_ = post(out, &dupRec{frame: out})
		}
		return nil
	}
	fail := func(err error) {
		if report && m.txcq != nil {
			m.txcq.pushErr(&eq.CQError{Context: ctx, Flags: fi.FlagSend | fi.FlagMsg, Err: fi.Code(err)})
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.queue) > 0 || h.roll(h.f.Delay) {
		m.queue = append(m.queue, delayed{at: time.Now().Add(time.Duration(1+h.f.Seed%5) * time.Millisecond), send: do, fail: fail})
		return nil
	}
	return do()
}

// release sends the delayed frames whose time came, in order; a frame
// the inner endpoint refuses for now stays first.
func (m *faultMsg) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for len(m.queue) > 0 && !m.queue[0].at.After(now) {
		err := m.queue[0].send()
		if errors.Is(err, fi.EAGAIN) {
			return
		}
		if err != nil {
			m.queue[0].fail(err) // the send ends in an error entry
		}
		m.queue = m.queue[1:]
	}
}

func (m *faultMsg) Send(buf []byte, desc any, dest fi.Addr, ctx any) error {
	return m.send([][]byte{buf}, ctx, true, func(f []byte, ictx any) error { return m.inner.Send(f, nil, dest, ictx) })
}

func (m *faultMsg) SendV(iov [][]byte, desc []any, dest fi.Addr, ctx any) error {
	return m.send(iov, ctx, true, func(f []byte, ictx any) error { return m.inner.Send(f, nil, dest, ictx) })
}

func (m *faultMsg) SendMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "hook: sendmsg: nil message")
	}
	return m.send(msg.IOV, msg.Context, true, func(f []byte, ictx any) error {
		inner := *msg
		inner.IOV, inner.Context = [][]byte{f}, ictx
		return m.inner.SendMsg(&inner, flags&^fi.FlagInject)
	})
}

func (m *faultMsg) Inject(buf []byte, dest fi.Addr) error {
	return m.send([][]byte{buf}, nil, false, func(f []byte, ictx any) error { return m.inner.Send(f, nil, dest, ictx) })
}

func (m *faultMsg) SendData(buf []byte, desc any, data uint64, dest fi.Addr, ctx any) error {
	return m.send([][]byte{buf}, ctx, true, func(f []byte, ictx any) error { return m.inner.SendData(f, nil, data, dest, ictx) })
}

func (m *faultMsg) InjectData(buf []byte, data uint64, dest fi.Addr) error {
	return m.send([][]byte{buf}, nil, false, func(f []byte, ictx any) error { return m.inner.SendData(f, nil, data, dest, ictx) })
}

// recv posts a receive with room for the trailer.
func (m *faultMsg) recv(iov [][]byte, ctx any, post func(buf []byte, ictx any) error) error {
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	rec := &recvRec{ctx: ctx, iov: iov, buf: make([]byte, n+trailerLen)}
	return post(rec.buf, rec)
}

func (m *faultMsg) Recv(buf []byte, desc any, src fi.Addr, ctx any) error {
	return m.recv([][]byte{buf}, ctx, func(b []byte, ictx any) error { return m.inner.Recv(b, nil, src, ictx) })
}

func (m *faultMsg) RecvV(iov [][]byte, desc []any, src fi.Addr, ctx any) error {
	return m.recv(iov, ctx, func(b []byte, ictx any) error { return m.inner.Recv(b, nil, src, ictx) })
}

func (m *faultMsg) RecvMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "hook: recvmsg: nil message")
	}
	return m.recv(msg.IOV, msg.Context, func(b []byte, ictx any) error {
		inner := *msg
		inner.IOV, inner.Context = [][]byte{b}, ictx
		return m.inner.RecvMsg(&inner, flags)
	})
}

// releaseAll sends every fault endpoint's due frames.
func (h *hooks) releaseAll() {
	h.mu.Lock()
	ms := append([]*faultMsg(nil), h.msgs...)
	h.mu.Unlock()
	for _, m := range ms {
		m.release()
	}
}

// translate turns an inner completion into the application's: the
// application's context, a checked and unframed receive. It reports
// false for a completion nobody sees (a duplicate's, an inject's) and
// returns an error entry for a frame that failed its check.
func (h *hooks) translate(c eq.Completion) (eq.Completion, *eq.CQError, bool) {
	switch r := c.Context.(type) {
	case *sendRec:
		c.Context = r.ctx
		return c, nil, r.report
	case *dupRec:
		return c, nil, false
	case *recvRec:
		c.Context = r.ctx
		n := c.Len - trailerLen
		if n < 0 || binary.LittleEndian.Uint32(r.buf[n:]) != trailerMagic ||
			!h.f.CorruptUnchecked && binary.LittleEndian.Uint32(r.buf[n+4:]) != crc32.Checksum(r.buf[:n], castagnoli) {
			return c, &eq.CQError{Context: r.ctx, Flags: c.Flags, Data: c.Data, Err: fi.EIO}, true
		}
		k := 0
		for _, b := range r.iov {
			k += copy(b, r.buf[k:n])
		}
		if k < n {
			return c, &eq.CQError{Context: r.ctx, Flags: c.Flags, Len: k, Data: c.Data, OLen: n - k, Err: fi.ETRUNC}, true
		}
		c.Len = n
		return c, nil, true
	}
	return c, nil, true
}

// translateErr gives an inner error entry the application's context; an
// error of a duplicate nobody sees reports false.
func translateErr(e *eq.CQError) (*eq.CQError, bool) {
	c := *e
	switch r := e.Context.(type) {
	case *sendRec:
		c.Context = r.ctx
		return &c, r.report
	case *dupRec:
		return nil, false
	case *recvRec:
		c.Context = r.ctx
		if c.OLen > 0 || c.Err == fi.ETRUNC {
			c.Err = fi.ETRUNC
		}
	}
	return &c, true
}
