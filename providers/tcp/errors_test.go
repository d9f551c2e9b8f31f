//go:build linux

package tcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// TestCloseSaysWhatIsOpen closes the fabric and the domain while objects
// are open on them: fi.EBUSY, with the kinds and counts in the message.
func TestCloseSaysWhatIsOpen(t *testing.T) {
	cleanEnv(t)
	busy := ": " + fi.EBUSY.Error()
	info := loInfo(t)
	f, err := fi.OpenFabric(info)
	require.NoError(t, err)
	d, err := f.OpenDomain(info)
	require.NoError(t, err)
	pep, err := ep.OpenPassive(f, info)
	require.NoError(t, err)
	var eps []ep.Endpoint
	for range 2 {
		e, err := ep.Open(d, info)
		require.NoError(t, err)
		eps = append(eps, e)
	}
	cq, err := eq.OpenCQ(d, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(t, err)
	require.NoError(t, eps[0].Bind(cq, fi.FlagSend|fi.FlagRecv))

	err = d.Close()
	require.ErrorIs(t, err, fi.EBUSY)
	require.EqualError(t, err, "tcp: close domain: 2 endpoints and 1 cq still open"+busy)
	require.EqualError(t, f.Close(), "tcp: close fabric: 1 domain and 1 passive endpoint still open"+busy)
	require.EqualError(t, cq.Close(), "tcp: close cq: 1 endpoint still bound"+busy)

	for _, e := range eps {
		require.NoError(t, e.Close())
	}
	require.EqualError(t, d.Close(), "tcp: close domain: 1 cq still open"+busy)
	require.NoError(t, cq.Close())
	require.NoError(t, d.Close())
	require.NoError(t, pep.Close())
	require.NoError(t, f.Close())
}

// TestBlockingWaitsEndWithContext waits on an endpoint's CQ and counter
// until the context ends: a deadline gives an error that is both
// context.DeadlineExceeded and fi.ETIMEDOUT, a cancel one that is both
// context.Canceled and fi.ECANCELED.
func TestBlockingWaitsEndWithContext(t *testing.T) {
	cleanEnv(t)
	info := loInfo(t)
	f, err := fi.OpenFabric(info)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, f.Close()) })
	d, err := f.OpenDomain(info)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	cq, err := eq.OpenCQ(d, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cq.Close()) })
	cntr, err := eq.OpenCounter(d, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cntr.Close()) })
	e, err := ep.Open(d, info)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.Bind(cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(t, e.Bind(cntr, fi.FlagRecv))

	waits := []struct {
		name string
		wait func(ctx context.Context) error
	}{
		{"cq sread", func(ctx context.Context) error {
			_, err := cq.SRead(ctx, make([]eq.Completion, 1))
			return err
		}},
		{"counter wait", func(ctx context.Context) error { return cntr.Wait(ctx, 1) }},
	}
	for _, w := range waits {
		t.Run(w.name+" deadline", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			err := w.wait(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.ErrorIs(t, err, fi.ETIMEDOUT)
			require.Equal(t, fi.ETIMEDOUT, fi.Code(err))
			require.EqualError(t, err, "tcp: "+w.name+": context deadline exceeded")
		})
		t.Run(w.name+" cancel", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel) // while the wait blocks, most likely
			err := w.wait(ctx)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, err, fi.ECANCELED)
			require.Equal(t, fi.ECANCELED, fi.Code(err))
			require.EqualError(t, err, "tcp: "+w.name+": context canceled")
		})
	}
}
