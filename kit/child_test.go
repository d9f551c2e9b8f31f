package kit_test

import (
	"context"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

// TestChildren opens every kind of child on a parent Ref, as a provider's
// domain and fabric do: the parent's close names what is open, each
// child's messages name the provider, and closing the children lets the
// parent close.
func TestChildren(t *testing.T) {
	busy := ": " + fi.EBUSY.Error()
	var fabric, domain kit.Ref
	closeFabric := func() error { return fabric.BeginCloseFor("tcp: close fabric", kit.KindPassiveEndpoint) }
	closeDomain := func() error { return domain.BeginCloseFor("tcp: close domain", kit.KindEndpoint) }

	require.NoError(t, fabric.AcquireKind(kit.KindDomain)) // the domain
	q, err := kit.OpenChildEQ(&fabric, nil, "tcp")
	require.NoError(t, err)
	require.NoError(t, fabric.Acquire()) // a passive endpoint
	require.EqualError(t, closeFabric(), "tcp: close fabric: 1 domain, 1 passive endpoint and 1 eq still open"+busy)

	cq, err := kit.OpenChildCQ(&domain, nil, "tcp")
	require.NoError(t, err)
	cntr, err := kit.OpenChildCounter(&domain, nil, "tcp")
	require.NoError(t, err)
	av, err := kit.OpenChildAV(&domain, nil, fi.FormatSockaddrIn, nil, "tcp")
	require.NoError(t, err)
	mrs := kit.NewMRTable(0)
	mr, err := kit.RegisterChildMR(&domain, mrs, &fi.MRAttr{Buf: make([]byte, 8), RequestedKey: 7}, 0, "tcp")
	require.NoError(t, err)
	require.NoError(t, domain.Acquire()) // two endpoints, as the providers take them
	require.NoError(t, domain.Acquire())
	err = closeDomain()
	require.ErrorIs(t, err, fi.EBUSY)
	require.EqualError(t, err, "tcp: close domain: 2 endpoints, 1 cq, 1 counter, 1 av and 1 mr still open"+busy)

	// The endpoints bind the queues and the AV.
	var b kit.Bindings
	b.Init(&fi.Info{Caps: fi.CapMsg, EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}})
	require.NoError(t, b.Bind(cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(t, b.Bind(cntr, fi.FlagSend))
	require.NoError(t, b.Bind(av, 0))
	require.NoError(t, b.Bind(q, 0))
	for _, c := range []struct {
		fid  fi.Fid
		want string
	}{
		{cq, "tcp: close cq: 1 endpoint still bound"},
		{cntr, "tcp: close counter: 1 endpoint still bound"},
		{av, "tcp: close av: 1 endpoint still bound"},
		{q, "tcp: close eq: 1 endpoint still bound"},
	} {
		err := c.fid.Close()
		require.ErrorIs(t, err, fi.EBUSY)
		require.EqualError(t, err, c.want+busy)
	}
	b.Release()
	domain.Release()
	domain.Release()

	// Children's own messages name the provider.
	_, err = mrs.Register(&fi.MRAttr{Buf: make([]byte, 8), RequestedKey: 7}, 0)
	require.ErrorIs(t, err, fi.ENOKEY)
	_, err = kit.RegisterChildMR(&domain, mrs, &fi.MRAttr{Buf: make([]byte, 8), RequestedKey: 7}, 0, "tcp")
	require.ErrorIs(t, err, fi.ENOKEY)
	require.EqualError(t, err, "tcp: register mr: key 7 already in use: "+fi.ENOKEY.Error())
	err = av.Remove([]fi.Addr{3}, 0)
	require.EqualError(t, err, "tcp: av remove: fi_addr 3 not in the av: "+fi.EINVAL.Error())

	for _, f := range []fi.Fid{cq, cntr, av, mr} {
		require.NoError(t, f.Close())
	}
	require.NoError(t, closeDomain(), "every child closed")
	fabric.ReleaseKind(kit.KindDomain)
	require.NoError(t, q.Close())
	require.EqualError(t, closeFabric(), "tcp: close fabric: 1 passive endpoint still open"+busy)
	fabric.Release()
	require.NoError(t, closeFabric())

	// A closed parent refuses children, naming the provider and the parent.
	_, err = kit.OpenChildCQ(&domain, nil, "tcp")
	require.ErrorIs(t, err, fi.EBADF)
	require.EqualError(t, err, "tcp: open cq: domain closed: "+fi.EBADF.Error())
	_, err = kit.OpenChildEQ(&fabric, nil, "tcp")
	require.EqualError(t, err, "tcp: open eq: fabric closed: "+fi.EBADF.Error())
}

// TestChildMessagesNameProvider checks the rule for messages of the
// software objects: a provider's object names the provider, one made
// without a provider names the public package (eq, fi).
func TestChildMessagesNameProvider(t *testing.T) {
	var parent kit.Ref
	_, err := kit.OpenChildCQ(&parent, &eq.CQAttr{Size: -1}, "shm")
	require.ErrorIs(t, err, fi.EINVAL)
	require.EqualError(t, err, "shm: open cq: size -1 is negative: "+fi.EINVAL.Error())
	_, err = kit.NewCQ(&eq.CQAttr{Size: -1})
	require.EqualError(t, err, "eq: open cq: size -1 is negative: "+fi.EINVAL.Error())
	_, err = kit.OpenChildEQ(&parent, &eq.Attr{Size: -1}, "udp")
	require.EqualError(t, err, "udp: open eq: size -1 is negative: "+fi.EINVAL.Error())
	_, err = kit.OpenChildCounter(&parent, &eq.CounterAttr{Events: 9}, "tcp")
	require.ErrorIs(t, err, fi.EINVAL)
	require.Contains(t, err.Error(), "tcp: open counter: unknown events 9")
	require.Zero(t, parent.Refs(), "a failed open releases the parent")

	// The advice on an unsupported wait object is a hint, which survives
	// the caller's wrapping.
	_, err = kit.OpenChildCQ(&parent, &eq.CQAttr{WaitObj: fi.WaitMutexCond}, "tcp")
	require.ErrorIs(t, err, fi.ENOSYS)
	require.EqualError(t, err, "tcp: open cq: wait object FI_WAIT_MUTEX_COND not supported: "+fi.ENOSYS.Error())
	require.Contains(t, errors.FlattenHints(errors.Wrap(err, "app: setup")), "fi.WaitUnspec")

	q, err := kit.OpenChildEQ(&parent, nil, "tcp")
	require.NoError(t, err)
	err = q.Write(&eq.Notify{})
	require.EqualError(t, err, "tcp: eq write: queue opened without fi.FlagWrite: "+fi.EINVAL.Error())
	require.Contains(t, errors.FlattenHints(err), "fi.FlagWrite")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = q.SRead(ctx)
	require.EqualError(t, err, "tcp: eq sread: context canceled")
	require.NoError(t, q.Close())
}
