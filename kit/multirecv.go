package kit

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// MultiRecvRelease says how a provider tells the application that an
// FI_MULTI_RECV buffer was released (fi_msg(3)): C's providers differ.
type MultiRecvRelease uint8

// Ways of telling a release.
const (
	// ReleaseEntry writes a completion of its own after the completion
	// of the last message that used the buffer: the buffer's context,
	// flags FI_MULTI_RECV alone, length 0, no buffer and no source (as
	// C 1.17's shm does, in smr_free_entry). [MultiRecv.ReleaseCompletion]
	// builds it.
	ReleaseEntry MultiRecvRelease = iota
	// ReleaseWithLast sets FI_MULTI_RECV on the completion of the last
	// message that used the buffer (as C 1.17's rxm does, in
	// rxm_finish_recv).
	ReleaseWithLast
)

// MultiRecv is the state of one receive buffer posted with
// FI_MULTI_RECV (fi_recvmsg flags, or the rx_attr op_flags default;
// fi_msg(3)): where the next message goes, how many messages placed in
// it have not completed yet, and whether the provider released it. It
// is the bookkeeping C's providers keep beside their receive queues
// (smr_adjust_multi_recv and smr_free_entry in prov/shm,
// rxm_adjust_multi_recv in prov/rxm), without the queues: a provider
// keeps its MultiRecvs in a fixed pool, and nothing here allocates once
// [MultiRecv.Post] succeeded.
//
// Messages go one after the other, each at the next free offset, with
// no alignment (C's shm and rxm align nothing either). Once the space
// left falls below the minimum the buffer was posted with
// (FI_OPT_MIN_MULTI_RECV, fi_endpoint(3)), or none is left, the buffer
// takes no more messages; it is released, the application's again,
// once every message placed in it completed. A message larger than the
// space left takes that space, is truncated (the provider completes it
// with fi.ETRUNC, as C's shm and rxm do) and the buffer is released.
//
// A MultiRecv is not safe for concurrent use: the provider guards it
// with the lock of its receive queue.
type MultiRecv struct {
	buf      []byte
	off      int
	min      int
	refs     int
	full     bool // takes no more messages
	canceled bool
	release  MultiRecvRelease
	ctx      any
}

// Post readies m for buf, posted with context ctx, a minimum of min
// bytes (the endpoint's FI_OPT_MIN_MULTI_RECV when the receive was
// posted) and the provider's way of telling releases. It returns
// fi.EINVAL, naming prov, for a buffer smaller than the minimum or
// empty, or a negative minimum: such a buffer could take no message, or
// one at most. It is the posting side of fi_recvmsg with FI_MULTI_RECV.
func (m *MultiRecv) Post(prov string, buf []byte, min int, ctx any, release MultiRecvRelease) error {
	switch {
	case min < 0:
		return errors.Wrapf(fi.EINVAL, "%s: recv: FI_MULTI_RECV minimum %d is negative", prov, min)
	case len(buf) == 0:
		return errors.Wrapf(fi.EINVAL, "%s: recv: FI_MULTI_RECV buffer is empty", prov)
	case len(buf) < min:
		return errors.WithHint(errors.Wrapf(fi.EINVAL,
			"%s: recv: FI_MULTI_RECV buffer of %d bytes is smaller than the minimum of %d (FI_OPT_MIN_MULTI_RECV)", prov, len(buf), min),
			"post a larger buffer, or lower the minimum with ep.SetOpt(ep.OptLevelEndpoint, ep.OptMinMultiRecv, n)")
	}
	*m = MultiRecv{buf: buf, min: min, ctx: ctx, release: release}
	return nil
}

// Context returns the context the buffer was posted with: that of every
// completion of a message placed in it, and of its release.
func (m *MultiRecv) Context() any { return m.ctx }

// Left returns the space the buffer has left.
func (m *MultiRecv) Left() int { return len(m.buf) - m.off }

// Offset returns where the next message goes.
func (m *MultiRecv) Offset() int { return m.off }

// Full reports whether the buffer takes no more messages (its space
// fell below the minimum, or it was cancelled): the provider removes it
// from its posted receives.
func (m *MultiRecv) Full() bool { return m.full }

// Pending returns how many messages placed in the buffer have not
// completed yet.
func (m *MultiRecv) Pending() int { return m.refs }

// Canceled reports whether the buffer was cancelled (fi_cancel).
func (m *MultiRecv) Canceled() bool { return m.canceled }

// Claim places a message of size bytes: it returns the part of the
// buffer the message goes to, at the next free offset, of size bytes or
// the space left when that is less (the message is then truncated: the
// provider completes it with fi.ETRUNC), and counts the message pending
// until [MultiRecv.Done]. full reports that the buffer takes no more
// messages from now on. The returned slice keeps the capacity of the
// posted buffer from its offset on, so that cap(posted)-cap(dst) is its
// offset, as fi_cq_data_entry's buf points into the posted buffer.
// Claim must not be called once the buffer is full.
func (m *MultiRecv) Claim(size int) (dst []byte, full bool) {
	n := min(max(size, 0), m.Left())
	dst = m.buf[m.off : m.off+n]
	m.off += n
	m.refs++
	if l := m.Left(); l == 0 || l < m.min || size > n {
		m.full = true
	}
	return dst, m.full
}

// Done records that a message placed by Claim completed (successfully or
// with an error) and returns the flags its completion carries: flags
// without FI_MULTI_RECV, or with it when the message is the last one
// and the provider tells releases with [ReleaseWithLast]. released
// reports that the buffer is the application's again: the provider
// frees m and, with [ReleaseEntry], writes [MultiRecv.ReleaseCompletion]
// after this message's completion, or, when the buffer was cancelled,
// its cancellation entry ([MultiRecv.CancelFlags]).
func (m *MultiRecv) Done(flags fi.Flags) (out fi.Flags, released bool) {
	m.refs--
	out = flags &^ fi.FlagMultiRecv
	released = m.full && m.refs == 0
	if released && m.release == ReleaseWithLast && !m.canceled {
		out |= fi.FlagMultiRecv
	}
	return out, released
}

// Cancel stops the buffer from taking messages (fi_cancel). now reports
// that no message placed in it is pending: the provider writes the
// cancellation entry (fi.ECANCELED with [MultiRecv.CancelFlags]) at
// once and frees m; else it does so when the last of them is done
// ([MultiRecv.Done] reports released).
func (m *MultiRecv) Cancel() (now bool) {
	m.full, m.canceled = true, true
	return m.refs == 0
}

// CancelFlags returns the flags of the buffer's cancellation entry:
// flags, the receive's (fi.FlagRecv|fi.FlagMsg), with FI_MULTI_RECV, as
// C's shm gives them (smr_ep_cancel_recv): that entry releases the
// buffer.
func (m *MultiRecv) CancelFlags(flags fi.Flags) fi.Flags { return flags | fi.FlagMultiRecv }

// ReleaseCompletion returns the completion that tells the release of the
// buffer with [ReleaseEntry]: the buffer's context and FI_MULTI_RECV,
// length 0, no buffer (smr_free_entry's entry in C's shm).
func (m *MultiRecv) ReleaseCompletion() eq.Completion {
	return eq.Completion{Context: m.ctx, Flags: fi.FlagMultiRecv}
}

// Reset forgets the buffer, so that a pool entry keeps no reference to
// the application's memory or context.
func (m *MultiRecv) Reset() { *m = MultiRecv{} }
