package rxm

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Multi-receive buffers (FI_MULTI_RECV, fi_msg(3); C's rxm_post_mrecv and
// rxm_adjust_multi_recv): an untagged receive of one buffer posted with
// fi.FlagMultiRecv (fi_recvmsg's flags, or the default receive flags)
// stays posted while messages, eager, segmented or rendezvous alike, take
// its space one after the other, each at the next free offset. Each
// message completes with the buffer's context, its length and
// eq.Completion.Buf, the part of the buffer it landed in; once the space
// left falls below the endpoint's minimum (FI_OPT_MIN_MULTI_RECV, the
// eager limit by default, as C's), the buffer takes no more messages, and
// the completion of the last message in it carries FI_MULTI_RECV: the
// buffer is the application's again (kit.MultiRecv with
// kit.ReleaseWithLast, as C's rxm tells it). A message larger than the
// space left fills it, completes with fi.ETRUNC and releases it. The
// buffer matches any source (C's rxm posts it with FI_ADDR_UNSPEC);
// tagged receives ignore the flag, as C's rxm does.

// multiRecv is a posted multi-receive buffer: its kit state and the
// core's descriptor of its memory. Pooled.
type multiRecv struct {
	kit.MultiRecv
	desc   any
	report bool
}

// getMulti takes a free multiRecv; mu is held.
func (e *endpoint) getMulti() *multiRecv {
	if k := len(e.multiFree); k > 0 {
		m := e.multiFree[k-1]
		e.multiFree = e.multiFree[:k-1]
		return m
	}
	return &multiRecv{}
}

// putMulti frees m; mu is held.
func (e *endpoint) putMulti(m *multiRecv) {
	m.Reset()
	m.desc = nil
	e.multiFree = append(e.multiFree, m)
}

// takeRecv takes posted receive i for a message of size bytes: the
// receive itself, or, for a multi-receive buffer, the part of it the
// message goes to (the buffer leaves the posted receives once it takes
// no more messages); mu is held.
func (e *endpoint) takeRecv(i int, size uint64) posted {
	m := e.recvs[i].multi
	if m == nil {
		return e.unpost(i)
	}
	p := e.claim(&e.recvs[i], size)
	if m.Full() {
		e.unpost(i)
	}
	return p
}

// claim returns the part of multi-receive buffer r's space a message of
// size bytes goes to, as a receive of its own; mu is held.
func (e *endpoint) claim(r *posted, size uint64) posted {
	m := r.multi
	dst, _ := m.Claim(int(min(size, uint64(maxInt))))
	p := posted{niov: 1, ctx: r.ctx, src: r.src, report: m.report, multi: m}
	p.iov[0], p.desc[0] = dst, m.desc
	return p
}

// multiReleased frees multi-receive buffer m, released after a message's
// completion, writing its cancellation entry first when fi_cancel or
// Close ended it. mu is held.
func (e *endpoint) multiReleased(m *multiRecv) {
	if m.Canceled() {
		e.rxFailed(&eq.CQError{Context: m.Context(), Flags: m.CancelFlags(recvFlags(false)), Err: fi.ECANCELED})
	}
	e.putMulti(m)
}

// cancelMulti ends multi-receive buffer m, removed from the posted
// receives by fi_cancel or Close: its cancellation entry (fi.ECANCELED,
// flagged FI_MULTI_RECV) comes now, or once the messages still arriving
// into it complete. mu is held.
func (e *endpoint) cancelMulti(m *multiRecv) {
	if m.Cancel() {
		e.multiReleased(m)
	}
}

// postMulti posts multi-receive buffer r (PostRx): the unexpected
// untagged messages waiting take its space first, in order, and it stays
// posted while it takes more. mu is held.
func (e *endpoint) postMulti(r *posted, op *kit.Op) error {
	prov := e.domain.fabric.Prov()
	if r.niov != 1 {
		return errors.Wrapf(fi.EINVAL, "%s: recv: an FI_MULTI_RECV buffer is one segment, not %d", prov, r.niov)
	}
	if e.nrecv[0] >= e.rxSize {
		return fi.EAGAIN
	}
	m := e.getMulti()
	if err := m.Post(prov, r.iov[0], e.minMulti, op.Context, kit.ReleaseWithLast); err != nil {
		e.putMulti(m)
		return err
	}
	m.desc, m.report = r.desc[0], r.report
	r.multi, r.src = m, fi.AddrUnspec
	for i := 0; i < len(e.unexp); {
		u := &e.unexp[i]
		if !r.matches(u.tagged, u.tag, u.src) {
			i++
			continue
		}
		if e.dropIfGone(u) {
			i = 0
			continue
		}
		size := u.msgSize()
		p := e.claim(r, size)
		full := m.Full() // m may be released by take below
		e.takeUnexp(i, &p)
		if full {
			return nil
		}
	}
	e.nrecv[0]++
	e.recvs = append(e.recvs, *r)
	return nil
}

// msgSize returns the size of unexpected message u.
func (u *unexpected) msgSize() uint64 {
	switch {
	case u.dyn != nil:
		return u.dyn.size
	case u.rndv:
		return u.size
	case u.sar != nil:
		return u.sar.size
	}
	return uint64(len(u.data))
}

// SetOpt sets an endpoint option (fi_setopt; C's rxm_ep_setopt):
// FI_OPT_MIN_MULTI_RECV, the space left below which a multi-receive
// buffer takes no more messages, for the buffers posted after it. Other
// options give fi.ENOPROTOOPT, a negative minimum fi.EINVAL.
func (e *endpoint) SetOpt(level ep.OptLevel, name ep.OptName, val int) error {
	prov := e.domain.fabric.Prov()
	if level != ep.OptLevelEndpoint || name != ep.OptMinMultiRecv {
		return errors.Wrapf(fi.ENOPROTOOPT, "%s: setopt: level %d option %d not supported (FI_OPT_MIN_MULTI_RECV is)", prov, level, name)
	}
	if val < 0 {
		return errors.Wrapf(fi.EINVAL, "%s: setopt: FI_OPT_MIN_MULTI_RECV %d is negative", prov, val)
	}
	e.mu.Lock()
	e.minMulti = val
	e.unlock()
	return nil
}

// GetOpt reads an endpoint option (fi_getopt; C's rxm_ep_getopt):
// FI_OPT_MIN_MULTI_RECV; others give fi.ENOPROTOOPT.
func (e *endpoint) GetOpt(level ep.OptLevel, name ep.OptName) (int, error) {
	if level != ep.OptLevelEndpoint || name != ep.OptMinMultiRecv {
		return 0, errors.Wrapf(fi.ENOPROTOOPT, "%s: getopt: level %d option %d not supported (FI_OPT_MIN_MULTI_RECV is)",
			e.domain.fabric.Prov(), level, name)
	}
	e.mu.Lock()
	defer e.unlock()
	return e.minMulti, nil
}
