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

// pollBatch is the most completions one ibv_poll_cq call takes.
const pollBatch = 16

// wcStatus is a work completion's status (enum ibv_wc_status).
type wcStatus int

// wcOpcode is a work completion's opcode (enum ibv_wc_opcode); it is not
// defined for a completion in error.
type wcOpcode int

// completion is one work completion (struct ibv_wc), as Go values.
type completion struct {
	wrID    uint64
	status  wcStatus
	opcode  wcOpcode
	byteLen uint32 // bytes received (receives, RDMA reads)
	immData uint32 // host order; valid when hasImm
	hasImm  bool   // IBV_WC_WITH_IMM
}

// cq is a completion queue with a completion channel of its own
// (ibv_create_comp_channel, ibv_create_cq). The channel's descriptor is
// non-blocking and a duplicate sits in the Go netpoller, so that wait
// parks a goroutine, not an OS thread in ibv_get_cq_event. A cq is not
// safe for concurrent use.
type cq struct {
	cq     cqC
	ch     compChannelC
	f      *os.File // a duplicate of ch's descriptor, in the netpoller
	rc     syscall.RawConn
	cqe    int // the entries the CQ got: at least the depth asked for
	wc     wcBuf
	events uint64 // channel events taken (and acknowledged) so far
}

// newCQ makes a CQ of depth entries, with its completion channel, on
// id's device (ibv_create_comp_channel, ibv_create_cq).
func newCQ(id cmIDC, depth int) (*cq, error) { return newCQOn(idContext(id), depth) }

// newCQOn is newCQ on device dev.
func newCQOn(dev ctxC, depth int) (*cq, error) {
	ch, fd, err := createCompChannelOn(dev)
	if err != nil {
		return nil, err
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		destroyCompChannel(ch)
		return nil, errors.Wrapf(fi.Code(err), "verbs: dup completion channel: %v", err)
	}
	f := os.NewFile(uintptr(dup), "ibv-comp-channel")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		destroyCompChannel(ch)
		return nil, errors.Wrapf(fi.EIO, "verbs: completion channel: %v", err)
	}
	c, cqe, err := createCQOn(dev, depth, ch)
	if err != nil {
		_ = f.Close()
		destroyCompChannel(ch)
		return nil, err
	}
	return &cq{cq: c, ch: ch, f: f, rc: rc, cqe: cqe, wc: newWCBuf(pollBatch)}, nil
}

// poll takes the completions there are, at most len(out) and pollBatch,
// without waiting or allocating (ibv_poll_cq): their count; 0 when there
// are none.
func (c *cq) poll(out []completion) (int, error) {
	n := pollCQ(c.cq, &c.wc, out)
	if n < 0 {
		return 0, errors.Wrap(fi.EIO, "verbs: ibv_poll_cq failed")
	}
	return n, nil
}

// wait is poll that waits for a completion until ctx ends (fi.ETIMEDOUT
// or fi.ECANCELED then): it arms the CQ (ibv_req_notify_cq), polls again
// for what came before the arming, and parks in the netpoller until the
// channel has an event (ibv_get_cq_event, ibv_ack_cq_events).
func (c *cq) wait(ctx context.Context, out []completion) (int, error) {
	for {
		if n, err := c.poll(out); n > 0 || err != nil {
			return n, err
		}
		if err := reqNotifyCQ(c.cq); err != nil {
			return 0, err
		}
		if n, err := c.poll(out); n > 0 || err != nil {
			return n, err
		}
		if err := c.nextEvent(ctx); err != nil {
			return 0, err
		}
	}
}

// nextEvent waits until ctx ends for the channel's next event, takes it
// and acknowledges it (ibv_get_cq_event, ibv_ack_cq_events).
func (c *cq) nextEvent(ctx context.Context) error {
	if err := c.f.SetReadDeadline(time.Time{}); err != nil {
		return errors.Wrap(fi.EBADF, "verbs: completion channel closed")
	}
	stop := context.AfterFunc(ctx, func() { _ = c.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var gerr syscall.Errno
	err := c.rc.Read(func(uintptr) bool {
		gerr = getCQEvent(c.ch)
		return gerr != syscall.EAGAIN
	})
	switch {
	case ctx.Err() != nil && (err != nil || gerr == syscall.EAGAIN):
		return errors.Wrap(fi.ContextError(ctx), "verbs: waiting for a completion")
	case err != nil:
		return errors.Wrapf(fi.EBADF, "verbs: completion channel: %v", err)
	case gerr != 0:
		return errnoErr("ibv_get_cq_event", gerr)
	}
	c.events++
	return nil
}

// close destroys the CQ and its channel (ibv_destroy_cq,
// ibv_destroy_comp_channel); its QPs must be destroyed first. A second
// call does nothing.
func (c *cq) close() error {
	if c.cq == nil {
		return nil
	}
	_ = c.f.Close()
	err := destroyCQ(c.cq)
	destroyCompChannel(c.ch)
	c.wc.free()
	c.cq, c.ch = nil, nil
	return err
}
