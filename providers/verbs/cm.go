//go:build verbs && cgo

package verbs

import (
	"context"
	"os"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
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
