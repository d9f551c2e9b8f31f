//go:build linux

package shm

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Multi-receive buffers (FI_MULTI_RECV, fi_msg(3)), as C 1.17's shm
// has them (smr_generic_mrecv, smr_get_msg, smr_adjust_multi_recv,
// smr_free_entry): an untagged receive of one segment posted with
// FI_MULTI_RECV (fi_recvmsg's flags, or the rx_attr op_flags default of
// the untagged calls) stays posted while messages fill it, each at the
// next free offset with no alignment, each completing on its own with
// the buffer's context, FI_RECV|FI_MSG, its length and where it landed
// (eq.Completion.Buf). Once the space left is below the endpoint's
// minimum (FI_OPT_MIN_MULTI_RECV when the buffer was posted), or none
// is left, the buffer takes no more messages, and once the last message
// in it completed an entry of its own releases it: the buffer's
// context, FI_MULTI_RECV alone, length 0. A message larger than the
// space left takes that space and completes with fi.ETRUNC, as in C
// (the buffer is then full). The state of each buffer is a
// kit.MultiRecv, from a pool of fixed size that the endpoint's first
// multi-receive buffer makes (initMulti).

// defMinMultiRecv is FI_OPT_MIN_MULTI_RECV's default: C 1.17 shm's,
// its SMR_INJECT_SIZE (smr_ep_srx_context).
const defMinMultiRecv = 4096

// initMulti makes the pool of multi-receive states: one per posted
// receive, and one per inbox entry for a full buffer a message still
// streams into.
func (d *dataPath) initMulti() {
	d.mrs = make([]kit.MultiRecv, d.rxSize+maxPeers)
	d.mrFree = make([]int32, len(d.mrs))
	for i := range d.mrFree {
		d.mrFree[i] = int32(len(d.mrs) - 1 - i)
	}
}

// takeFor removes posted receive k for a message of size bytes, or,
// when it is an FI_MULTI_RECV buffer, places the message in it: the
// returned entry is the message's part of the buffer, and the buffer
// leaves the posted receives once it is full.
func (d *dataPath) takeFor(tagged bool, k int, size uint64) rxEntry {
	if tagged || !d.recvs[k].owner {
		return d.take(tagged, k)
	}
	o := &d.recvs[k]
	r := d.part(o, size)
	if d.mrs[o.mr-1].Full() {
		d.take(false, k)
	}
	return r
}

// part claims the place of a message of size bytes in the multi-receive
// buffer o.
func (d *dataPath) part(o *rxEntry, size uint64) rxEntry {
	dst, _ := d.mrs[o.mr-1].Claim(int(min(size, uint64(maxInt))))
	r := rxEntry{ctx: o.ctx, src: o.src, report: o.report, mr: o.mr, niov: 1, size: len(dst)}
	r.iov[0] = dst
	return r
}

// postMulti posts the multi-receive buffer r: unexpected untagged
// messages that match go into it first, in order, until it is full;
// if it is not, it waits in order with the other receives. It returns
// fi.EINVAL for a buffer smaller than the minimum, and bare fi.EAGAIN
// when the receive queue is full. The endpoint's first multi-receive
// buffer makes the pool of their states, once (about 80 bytes per
// entry of the receive queue): endpoints that never use them do not
// carry it.
func (d *dataPath) postMulti(e *endpoint, r *rxEntry) error {
	if d.mrs == nil {
		d.initMulti()
	}
	if len(d.recvs) == cap(d.recvs) || len(d.mrFree) == 0 {
		return fi.EAGAIN
	}
	i := d.mrFree[len(d.mrFree)-1]
	m := &d.mrs[i]
	if err := m.Post(provName, r.iov[0], d.minMulti, r.ctx, kit.ReleaseEntry); err != nil {
		return err
	}
	d.mrFree = d.mrFree[:len(d.mrFree)-1]
	r.mr, r.owner = int16(i+1), true
	placed := 0
	for k := 0; k < len(d.unexp); {
		u := d.unexp[k]
		x := &d.unexPool[u]
		if r.src != fi.AddrUnspec && r.src != x.src {
			k++
			continue
		}
		in, ok := d.unexAnswer(e, x)
		if !ok {
			// Peers that keep to their answer credits never fill the
			// answer queue this way (answerCredits).
			if placed == 0 {
				m.Reset()
				d.mrFree = append(d.mrFree, i)
				return fi.EAGAIN
			}
			break
		}
		copy(d.unexp[k:], d.unexp[k+1:])
		d.unexp = d.unexp[:len(d.unexp)-1]
		p := d.part(r, x.h.size)
		full := m.Full()
		d.deliver(e, in, &p, &x.h, d.unexData(e, x), &x.segs, x.pid, x.src)
		d.unhold(e, x)
		d.unexFree = append(d.unexFree, u)
		placed++
		if full {
			return nil // released by deliver's completion
		}
	}
	d.recvs = append(d.recvs, *r)
	return nil
}

// cancelMulti cancels multi-receive buffer i, which left the posted
// receives (fi_cancel, Close): it is released with an fi.ECANCELED
// entry flagged FI_MULTI_RECV, as C's smr_ep_cancel_recv gives it, at
// once, or when the message streaming into it completes.
func (d *dataPath) cancelMulti(e *endpoint, i int32) {
	if d.mrs[i].Cancel() {
		d.releaseMulti(e, i)
	}
}

// releaseMulti gives multi-receive buffer i back to the application: an
// entry of its own with FI_MULTI_RECV (length 0, no source), or the
// fi.ECANCELED entry when it was cancelled; then frees its state. The
// entry is written whatever the receive's FI_COMPLETION (C writes it
// with smr_rx_comp, outside the selective-completion check), and counts
// nothing but a cancellation, as other cancelled receives do.
func (d *dataPath) releaseMulti(e *endpoint, i int32) {
	m := &d.mrs[i]
	if m.Canceled() {
		if e.RxCQ != nil {
			_ = e.RxCQ.CompleteErr(&eq.CQError{Context: m.Context(), Flags: m.CancelFlags(fi.FlagRecv | fi.FlagMsg), Err: fi.ECANCELED})
		}
		if c := e.Cntr[kit.CntrRecv]; c != nil {
			_ = c.AddErr(1)
		}
	} else if e.RxCQ != nil {
		_ = e.RxCQ.CompleteOverflow(m.ReleaseCompletion(), fi.AddrUnspec)
	}
	m.Reset()
	d.mrFree = append(d.mrFree, i)
}

var _ ep.Options = (*endpoint)(nil)

// SetOpt sets an endpoint option (fi_setopt(3), level FI_OPT_ENDPOINT).
// The endpoint has one, as C 1.17's shm (smr_setopt):
// FI_OPT_MIN_MULTI_RECV (ep.OptMinMultiRecv), the space left in an
// FI_MULTI_RECV buffer below which it is released; 4096 bytes unless
// set, and taken by the buffers posted after it is set. A negative size
// is fi.EINVAL; every other option, FI_OPT_CM_DATA_SIZE included (shm's
// endpoints make no connections), is fi.ENOPROTOOPT.
func (e *endpoint) SetOpt(level ep.OptLevel, name ep.OptName, val int) error {
	if err := optKnown("setopt", level, name); err != nil {
		return err
	}
	if val < 0 {
		return errors.Wrapf(fi.EINVAL, "shm: setopt: FI_OPT_MIN_MULTI_RECV %d is negative", val)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return errors.Wrap(fi.EBADF, "shm: setopt: endpoint closed")
	}
	e.dp.minMulti = val
	return nil
}

// GetOpt reads an endpoint option (fi_getopt(3), level
// FI_OPT_ENDPOINT): FI_OPT_MIN_MULTI_RECV (ep.OptMinMultiRecv), as
// C 1.17's shm (smr_getopt); every other option is fi.ENOPROTOOPT.
func (e *endpoint) GetOpt(level ep.OptLevel, name ep.OptName) (int, error) {
	if err := optKnown("getopt", level, name); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dp.minMulti, nil
}

// optKnown returns fi.ENOPROTOOPT, with the reason, for an option the
// endpoint does not have.
func optKnown(call string, level ep.OptLevel, name ep.OptName) error {
	switch {
	case level != ep.OptLevelEndpoint:
		return errors.Wrapf(fi.ENOPROTOOPT, "shm: %s: option level %d unknown (shm's endpoints have FI_OPT_ENDPOINT)", call, level)
	case name == ep.OptMinMultiRecv:
		return nil
	case name == ep.OptCMDataSize:
		return errors.Wrapf(fi.ENOPROTOOPT, "shm: %s: FI_OPT_CM_DATA_SIZE applies to connection-oriented endpoints; shm's are FI_EP_RDM", call)
	}
	return errors.Wrapf(fi.ENOPROTOOPT, "shm: %s: option %d not supported (shm has FI_OPT_MIN_MULTI_RECV only, as C's)", call, name)
}
