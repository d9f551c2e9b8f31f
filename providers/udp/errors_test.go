//go:build linux

package udp_test

import (
	"context"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// TestCloseSaysWhatIsOpen closes each parent while it has children, and
// each queue while an endpoint is bound to it: the error is fi.EBUSY and
// says which kinds hold the object and how many.
func TestCloseSaysWhatIsOpen(t *testing.T) {
	cleanEnv(t)
	busy := ": " + fi.EBUSY.Error()
	info := loInfo(t, 0)
	f, err := fi.OpenFabric(info)
	require.NoError(t, err)
	d, err := f.OpenDomain(info)
	require.NoError(t, err)
	q, err := eq.OpenEQ(f, nil)
	require.NoError(t, err)
	txcq, err := eq.OpenCQ(d, &eq.CQAttr{Format: eq.FormatMsg})
	require.NoError(t, err)
	rxcq, err := eq.OpenCQ(d, &eq.CQAttr{Format: eq.FormatMsg})
	require.NoError(t, err)
	av, err := fi.OpenAV(d, &fi.AVAttr{Type: fi.AVTable})
	require.NoError(t, err)
	e, err := ep.Open(d, info)
	require.NoError(t, err)
	require.NoError(t, e.Bind(txcq, fi.FlagSend))
	require.NoError(t, e.Bind(rxcq, fi.FlagRecv))
	require.NoError(t, e.Bind(av, 0))
	require.NoError(t, e.Bind(q, 0))
	require.NoError(t, e.Enable())

	for _, c := range []struct {
		fid  fi.Fid
		want string
	}{
		{f, "udp: close fabric: 1 domain and 1 eq still open"},
		{d, "udp: close domain: 1 endpoint, 2 cqs and 1 av still open"},
		{txcq, "udp: close cq: 1 endpoint still bound"},
		{av, "udp: close av: 1 endpoint still bound"},
		{q, "udp: close eq: 1 endpoint still bound"},
	} {
		err := c.fid.Close()
		require.ErrorIs(t, err, fi.EBUSY)
		require.Equal(t, fi.EBUSY, fi.Code(err))
		require.EqualError(t, err, c.want+busy)
	}

	require.NoError(t, e.Close())
	require.EqualError(t, d.Close(), "udp: close domain: 2 cqs and 1 av still open"+busy)
	for _, c := range []fi.Fid{txcq, rxcq, av, q} {
		require.NoError(t, c.Close())
	}
	require.EqualError(t, f.Close(), "udp: close fabric: 1 domain still open"+busy)
	require.NoError(t, d.Close())
	require.NoError(t, f.Close())
	require.ErrorIs(t, f.Close(), fi.EBADF)
}

// TestBlockingReadsEndWithContext waits on a real endpoint's queues until
// the context ends: a deadline gives an error that is both
// context.DeadlineExceeded and fi.ETIMEDOUT, a cancel one that is both
// context.Canceled and fi.ECANCELED.
func TestBlockingReadsEndWithContext(t *testing.T) {
	cleanEnv(t)
	n := newNode(t, loInfo(t, 0), true)
	buf := make([]byte, 64)
	require.NoError(t, n.msg.Recv(buf, nil, fi.AddrUnspec, nil), "a receive that nothing completes")

	waits := []struct {
		name string
		wait func(ctx context.Context) error
	}{
		{"cq sread", func(ctx context.Context) error {
			_, err := n.rxcq.SRead(ctx, make([]eq.Completion, 1))
			return err
		}},
		{"eq sread", func(ctx context.Context) error {
			_, err := n.eq.SRead(ctx)
			return err
		}},
	}
	for _, w := range waits {
		t.Run(w.name+" deadline", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			err := w.wait(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.ErrorIs(t, err, fi.ETIMEDOUT)
			require.Equal(t, fi.ETIMEDOUT, fi.Code(err))
			require.EqualError(t, err, "udp: "+w.name+": context deadline exceeded")
		})
		t.Run(w.name+" cancel", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel) // while the wait blocks, most likely
			err := w.wait(ctx)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, err, fi.ECANCELED)
			require.Equal(t, fi.ECANCELED, fi.Code(err))
			require.EqualError(t, err, "udp: "+w.name+": context canceled")
		})
	}
}
