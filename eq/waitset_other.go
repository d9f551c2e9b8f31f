//go:build !linux

package eq

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// Off Linux there are no wait descriptors (FI_WAIT_FD needs an eventfd),
// and so no wait sets.

type poller struct{ fd int }

func newPoller() (*poller, error) {
	return nil, errors.WithHint(errors.Wrap(fi.ENOSYS, "eq: wait set: wait sets need Linux (epoll and FI_WAIT_FD)"),
		"wait on one queue at a time with SRead or Counter.Wait")
}

func (*poller) add(int) error { return fi.ENOSYS }
func (*poller) del(int)       {}
func (*poller) wait() error   { return fi.ENOSYS }
func (*poller) close() error  { return nil }
