package fi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	crdb "github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

func TestContextError(t *testing.T) {
	t.Run("live", func(t *testing.T) {
		require.NoError(t, fi.ContextError(context.Background()))
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
		defer cancel()
		err := fi.ContextError(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, fi.ETIMEDOUT)
		require.NotErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, fi.ECANCELED)
		require.Equal(t, fi.ETIMEDOUT, fi.Code(err))
		require.EqualError(t, err, "context deadline exceeded")
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := fi.ContextError(ctx)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, fi.ECANCELED)
		require.NotErrorIs(t, err, context.DeadlineExceeded)
		require.NotErrorIs(t, err, fi.ETIMEDOUT)
		require.Equal(t, fi.ECANCELED, fi.Code(err))
		require.EqualError(t, err, "context canceled")
	})
	t.Run("cause", func(t *testing.T) {
		why := errors.New("shutting down")
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(why)
		err := fi.ContextError(ctx)
		require.ErrorIs(t, err, why)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, fi.ECANCELED)
		require.Equal(t, fi.ECANCELED, fi.Code(err))
		require.EqualError(t, err, "context canceled: shutting down")
	})
	t.Run("through wrappers", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		defer cancel()
		<-ctx.Done()
		err := crdb.Wrapf(fi.ContextError(ctx), "tcp: cq sread")
		for _, target := range []error{context.DeadlineExceeded, fi.ETIMEDOUT} {
			require.ErrorIs(t, err, target)
			require.True(t, crdb.Is(err, target), "cockroachdb's errors.Is finds %v", target)
		}
		require.Equal(t, fi.ETIMEDOUT, fi.Code(err))
		require.EqualError(t, err, "tcp: cq sread: context deadline exceeded")
	})
}
