//go:build verbs && cgo

package verbs

import (
	"context"
	"os"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// cmChannel is an rdma_cm event channel whose descriptor is non-blocking
// and waited on through the Go netpoller: a goroutine waiting for a
// connection event parks without holding an OS thread in C
// (rdma_get_cm_event(3) would block one).
type cmChannel struct {
	ch cmChannelC
	f  *os.File // a duplicate of the channel's descriptor, in the netpoller
	rc syscall.RawConn
}

// openCMChannel creates an event channel (rdma_create_event_channel).
func openCMChannel() (*cmChannel, error) {
	ch, fd, err := createChannel()
	if err != nil {
		return nil, err
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		destroyChannel(ch)
		return nil, errors.Wrapf(fi.Code(err), "verbs: dup event channel: %v", err)
	}
	f := os.NewFile(uintptr(dup), "rdma-cm")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		destroyChannel(ch)
		return nil, errors.Wrapf(fi.EIO, "verbs: event channel: %v", err)
	}
	return &cmChannel{ch: ch, f: f, rc: rc}, nil
}

// next returns the channel's next event, waiting for it until ctx ends
// (fi.ETIMEDOUT or fi.ECANCELED then).
func (c *cmChannel) next(ctx context.Context) (cmEventC, error) {
	if err := c.f.SetReadDeadline(time.Time{}); err != nil {
		return cmEventC{}, errors.Wrap(fi.EBADF, "verbs: event channel closed")
	}
	stop := context.AfterFunc(ctx, func() { _ = c.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var ev cmEventC
	var gerr error
	err := c.rc.Read(func(uintptr) bool {
		ev, gerr = getEvent(c.ch)
		return gerr != syscall.EAGAIN
	})
	switch {
	case ctx.Err() != nil && (err != nil || gerr == syscall.EAGAIN):
		return cmEventC{}, errors.Wrap(fi.ContextError(ctx), "verbs: waiting for a connection event")
	case err != nil:
		return cmEventC{}, errors.Wrapf(fi.EBADF, "verbs: event channel: %v", err)
	case gerr != nil:
		return cmEventC{}, errnoErr("rdma_get_cm_event", gerr.(syscall.Errno))
	}
	return ev, nil
}

// close destroys the channel; its ids must be destroyed first.
func (c *cmChannel) close() {
	_ = c.f.Close()
	destroyChannel(c.ch)
}

// rejConsumer is the reject reason of the peer application's fi_reject
// (RejectReason, reject.go), as an rdma_cm REJECTED event's status.
const rejConsumer = int(RejectConsumer)

// Refusals the provider makes by itself (a passive endpoint whose backlog
// is full, or that is closed or not listening) are consumer rejects whose
// private data has a zero length in the provider's header, so that any
// peer, C's verbs provider among them, reads them as fi_reject without
// data, followed by a tag and the eq.ConnReason that a gofabric peer
// reads (rejectTag). The REJ's private data field (148 bytes) is
// zero-padded, so an application's reject without data never carries
// the tag.
var rejectTag = [...]byte{'g', 'f', 'R', 'j'}

// providerReject returns the private data of a provider's own refusal for
// reason.
func providerReject(reason eq.ConnReason) []byte {
	out := make([]byte, 0, cmHdrSize+len(rejectTag)+1)
	out = append(out, 0)
	out = append(out, rejectTag[:]...)
	return append(out, byte(reason))
}

// providerRejectReason returns the reason a provider's own refusal
// carries in raw, an event's private data, or ReasonUnknown.
func providerRejectReason(raw []byte) eq.ConnReason {
	n := cmHdrSize + len(rejectTag)
	if len(raw) <= n || raw[0] != 0 || string(raw[cmHdrSize:n]) != string(rejectTag[:]) {
		return eq.ReasonUnknown
	}
	switch r := eq.ConnReason(raw[n]); r {
	case eq.ReasonBacklogFull, eq.ReasonNoListener:
		return r
	}
	return eq.ReasonUnknown
}

// connFailure reads an rdma_cm error event of a connection attempt or a
// connection (REJECTED, ADDR_ERROR, ROUTE_ERROR, UNREACHABLE,
// CONNECT_ERROR, DEVICE_REMOVAL, ADDR_CHANGE): the error code, the
// ProvErrno (the IB reject reason of a REJECTED, else the errno of the
// event's negative status, as C's vrb_eq_cm_process_event) and the
// reason. data is the event's private data.
func connFailure(typ, status int, data []byte) (code fi.Errno, provErrno int, reason eq.ConnReason) {
	if typ == evRejected {
		r := RejectReason(status)
		code = fi.ECONNREFUSED
		if r == RejectTimeout {
			code = fi.ETIMEDOUT
		}
		reason = r.Reason()
		if r == RejectConsumer {
			if pr := providerRejectReason(data); pr != eq.ReasonUnknown {
				reason = pr
			}
		}
		return code, status, reason
	}
	if status < 0 {
		provErrno = -status
	}
	timedOut := status == -int(syscall.ETIMEDOUT)
	switch typ {
	case evAddrError, evRouteError:
		code, reason = statusCode(status, fi.EHOSTUNREACH), eq.ReasonUnreachable
	case evUnreachable:
		code, reason = statusCode(status, fi.ETIMEDOUT), eq.ReasonUnreachable
	case evDeviceRemoval:
		return fi.ENODEV, provErrno, eq.ReasonTransport
	case evAddrChange:
		return fi.EADDRNOTAVAIL, provErrno, eq.ReasonTransport
	default: // CONNECT_ERROR and any other
		code, reason = statusCode(status, fi.ETIMEDOUT), eq.ReasonTransport
	}
	if timedOut {
		code, reason = fi.ETIMEDOUT, eq.ReasonTimedOut
	}
	return code, provErrno, reason
}

// codeReason is the reason of a connection attempt that failed at a call
// (rdma_resolve_addr, rdma_resolve_route, rdma_create_qp, rdma_connect,
// rdma_accept) with code.
func codeReason(code fi.Errno) eq.ConnReason {
	switch code {
	case fi.ETIMEDOUT:
		return eq.ReasonTimedOut
	case fi.ENETUNREACH, fi.EHOSTUNREACH, fi.EADDRNOTAVAIL, fi.ENODEV:
		return eq.ReasonUnreachable
	}
	return eq.ReasonTransport
}

// statusCode is an rdma_cm event's status as an fi.Errno: a negative
// errno's code, else def.
func statusCode(status int, def fi.Errno) fi.Errno {
	if status < 0 {
		if c := fi.Code(syscall.Errno(-status)); c != fi.EOTHER {
			return c
		}
	}
	return def
}
