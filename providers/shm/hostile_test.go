//go:build linux

package shm_test

import (
	"context"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/providers/shm"
	"github.com/stretchr/testify/require"
)

// A peer that writes what no correct peer writes into its ring loses its
// entry; the receiver keeps working, and the cut-off sender starts over
// with a fresh entry on its next send.
func TestMalformedSlotsCutThePeerOff(t *testing.T) {
	bad := map[string]func(slot []byte){
		"unknown op":         func(s []byte) { s[0] = 99 },
		"inline too long":    func(s []byte) { s[0], s[1], s[4], s[8] = 1, 0, 255, 255 },
		"unknown protocol":   func(s []byte) { s[0], s[1] = 1, 9 },
		"sar chunk unasked":  func(s []byte) { s[0], s[4], s[60] = 6, 16, 0 },
		"too many cma segs":  func(s []byte) { s[0], s[1], s[56] = 1, 1, 9 },
		"unknown flag":       func(s []byte) { s[0], s[2] = 1, 0x80 },
		"cma seg count zero": func(s []byte) { s[0], s[1], s[56] = 1, 1, 0 },
		// An atomic compare whose operand and compare bytes (2 x 192)
		// would run past the slot.
		"atomic past the slot": func(s []byte) {
			s[0], s[1], s[4], s[5], s[8], s[16], s[17], s[18] = 8, 0, 0x80, 1, 192, 12, 7, 2
		},
	}
	for name, corrupt := range bad {
		t.Run(name, func(t *testing.T) {
			a, b := openNode(t), openNode(t)
			defer a.close(t)
			defer b.close(t)
			toB := a.insert(t, b.name)
			rbuf := make([]byte, 64)
			require.NoError(t, b.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r"))
			// A valid message first, so that a holds an entry in b's inbox.
			require.NoError(t, a.ep.(ep.Msg).Inject([]byte("ok"), toB))
			c, _ := pollAll(t, b, a, b)
			require.Equal(t, "r", c.Context)

			require.NoError(t, shm.WriteRawSlot(a.ep, toB, corrupt))
			require.NoError(t, b.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r2"))
			var comp [1]eq.Completion
			for range 100 {
				_, _ = b.cq.Read(comp[:]) // b drops the entry, nothing completes
			}
			require.Equal(t, make([]byte, 62), rbuf[2:], "the posted buffer was written")
			// a's next message goes through a new entry and arrives.
			deadline := time.Now().Add(10 * time.Second)
			for a.ep.(ep.Msg).Inject([]byte("again"), toB) != nil {
				_, _ = a.cq.Read(nil)
				_, _ = b.cq.Read(nil)
				require.True(t, time.Now().Before(deadline))
			}
			c, _ = pollAll(t, b, a, b)
			require.Equal(t, "r2", c.Context)
			require.Equal(t, "again", string(rbuf[:c.Len]))
		})
	}
}

// SRead sleeps on the doorbell until a message arrives, and returns the
// context's error when none does.
func TestBlockingRead(t *testing.T) {
	a, b := openNode(t), openNode(t)
	defer a.close(t)
	defer b.close(t)
	toB := a.insert(t, b.name)
	rbuf := make([]byte, 64)
	require.NoError(t, b.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r"))

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := b.cq.SRead(ctx, make([]eq.Completion, 1))
	require.ErrorIs(t, err, context.DeadlineExceeded)

	got := make(chan eq.Completion, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := make([]eq.Completion, 1)
		if n, err := b.cq.SRead(ctx, c); err == nil && n == 1 {
			got <- c[0]
		}
		close(got)
	}()
	time.Sleep(50 * time.Millisecond) // let the reader block first
	require.NoError(t, a.ep.(ep.Msg).Inject([]byte("wake"), toB))
	c, ok := <-got
	require.True(t, ok, "SRead did not return the completion")
	require.Equal(t, "r", c.Context)
	require.Equal(t, "wake", string(rbuf[:c.Len]))
}

// The inline data path allocates nothing.
func TestInlineDataPathDoesNotAllocate(t *testing.T) {
	a, b := openNode(t), openNode(t)
	defer a.close(t)
	defer b.close(t)
	toB := a.insert(t, b.name)
	msg := make([]byte, 64)
	rbuf := make([]byte, 64)
	ctx := &struct{}{}
	comp := make([]eq.Completion, 1)
	round := func() {
		if err := b.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, ctx); err != nil {
			panic(err)
		}
		if err := a.ep.(ep.Msg).Send(msg, nil, toB, ctx); err != nil {
			panic(err)
		}
		for n := 0; n == 0; n, _ = b.cq.Read(comp) {
		}
		for n := 0; n == 0; n, _ = a.cq.Read(comp) {
		}
	}
	round()
	require.Zero(t, testing.AllocsPerRun(200, round))
}
