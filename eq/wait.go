package eq

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// FDWaiter is implemented by event queues, completion queues and counters
// that can be opened with the FI_WAIT_FD wait object (WaitObj fi.WaitFD in
// Attr, CQAttr or CounterAttr; fi_eq(3), fi_cq(3), fi_cntr(3)): a file
// descriptor the application waits on with its own poll(2), select(2) or
// epoll(7), beside descriptors of its own, instead of blocking in SRead or
// Counter.Wait. Objects opened with fi.WaitUnspec get theirs at the first
// WaitFD or TryWait (the provider's choice, as in C, where FI_WAIT_UNSPEC
// objects have a descriptor too); those opened with fi.WaitNone have
// none.
//
// The descriptor becomes readable when the object may have something to
// read. Before each wait on it the application calls TryWait, and blocks
// only when TryWait returns nil (fi_trywait(3)'s rule); it reads the
// object after every wakeup:
//
//	fd, err := eq.WaitFD(cq)
//	...
//	for {
//		if err := cq.(eq.FDWaiter).TryWait(); err == nil {
//			unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
//		} else if err != fi.EAGAIN {
//			return err
//		}
//		n, err := cq.Read(entries)
//		...
//	}
//
// Wakeups may be spurious (a Read then returns fi.EAGAIN), never lost: a
// completion, event or count change after a successful TryWait makes the
// descriptor readable, and with manual progress (FI_PROGRESS_MANUAL) the
// provider moves data while the application waits, so that the entries
// the wait is for arrive. The descriptor stays readable until the next
// TryWait, which clears it.
//
// All methods are safe for concurrent use; TryWait does not allocate
// (but for making an fi.WaitUnspec object's descriptor, once).
type FDWaiter interface {
	// WaitFD returns the object's wait descriptor (fi_control with
	// FI_GETWAIT). The object owns it: do not read, write or close it;
	// Close closes it, after making it readable so that a thread blocked
	// on it wakes. It returns an error with fi.ENODATA in its chain when
	// the object was opened with fi.WaitNone (as C's providers return
	// -FI_ENODATA), and fi.EBADF after Close.
	WaitFD() (int, error)
	// TryWait says whether the application may block on the descriptor
	// (fi_trywait): nil when it may, bare fi.EAGAIN when it must read
	// first, because entries are queued (a counter: its counts changed
	// since the previous TryWait) or the progress TryWait runs found
	// some. It returns bare fi.EINVAL when the object was opened with
	// fi.WaitNone and bare fi.EBADF after Close.
	TryWait() error
}

// WaitFD returns the wait descriptor of an event queue, completion queue or
// counter opened with WaitObj fi.WaitFD (fi_control(3) with FI_GETWAIT). It
// returns an error with fi.ENOSYS in its chain when obj has no wait
// descriptors (no FDWaiter), and FDWaiter.WaitFD's errors otherwise.
func WaitFD(obj fi.Fid) (int, error) {
	w, ok := obj.(FDWaiter)
	if !ok {
		return -1, errors.Wrapf(fi.ENOSYS, "eq: wait fd: %T has no wait descriptor", obj)
	}
	return w.WaitFD()
}

// TryWait is fi_trywait(3) over several objects with wait descriptors: nil
// when the application may block on all their descriptors, or the first
// error an object's TryWait returns, bare fi.EAGAIN when one of them needs
// reading first. Objects before that one are left ready for the wait,
// which is harmless: the application reads them all and calls TryWait
// again. It returns bare fi.EINVAL for an object that is not an FDWaiter.
// It does not allocate.
func TryWait(objs ...fi.Fid) error {
	for _, o := range objs {
		w, ok := o.(FDWaiter)
		if !ok {
			return fi.EINVAL
		}
		if err := w.TryWait(); err != nil {
			return err
		}
	}
	return nil
}
