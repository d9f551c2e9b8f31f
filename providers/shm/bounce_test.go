//go:build linux

package shm_test

import (
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Messages of 193 bytes to 4 KiB travel in a bounce chunk of the
// sender's entry (protoBuf). Sent before any receive is posted, the
// first four hold the four chunks at the receiver and the later ones
// take the other ways (CMA or streaming): every message still arrives
// whole, in order, whether tagged or not, and the sends complete at
// once. With CMA off too.
func TestBounceUnexpectedInOrder(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, cma := range []string{"0", "1"} {
		t.Run("disable_cma="+cma, func(t *testing.T) {
			t.Setenv("FI_SHM_DISABLE_CMA", cma)
			a, b := openNode(t), openNode(t)
			defer a.close(t)
			defer b.close(t)
			toB := a.insert(t, b.name)
			sizes := []int{193, 4096, 1000, 4096, 2048, 4096, 300, 4096, 64, 20000}
			msgs := make([][]byte, len(sizes))
			for k, n := range sizes {
				msgs[k] = pattern(make([]byte, n), k)
				var err error
				for {
					if k%2 == 0 {
						err = a.ep.(ep.Msg).Send(msgs[k], nil, toB, k)
					} else {
						err = a.ep.(ep.Tagged).TSend(msgs[k], nil, toB, uint64(k), k)
					}
					if err != fi.EAGAIN {
						break
					}
					_, _ = a.cq.Read(nil)
					_, _ = b.cq.Read(nil)
				}
				require.NoError(t, err, "send %d", k)
			}
			// b takes them in as unexpected messages.
			for range 100 {
				_, _ = b.cq.Read(nil)
				_, _ = a.cq.Read(nil)
			}
			// Tagged ones first, in reverse order of their tags: each
			// finds its message among the unexpected ones.
			bufs := make([][]byte, len(sizes))
			for k := len(sizes) - 1; k >= 0; k-- {
				bufs[k] = make([]byte, sizes[k]+7)
				if k%2 == 1 {
					require.NoError(t, b.ep.(ep.Tagged).TRecv(bufs[k], nil, fi.AddrUnspec, uint64(k), 0, k))
				}
			}
			for k := range sizes {
				if k%2 == 0 {
					require.NoError(t, b.ep.(ep.Msg).Recv(bufs[k], nil, fi.AddrUnspec, k))
				}
			}
			got := map[int]bool{}
			for len(got) < len(sizes) {
				c, _ := pollAll(t, b, a, b)
				k := c.Context.(int)
				require.False(t, got[k], "message %d twice", k)
				got[k] = true
				require.Equal(t, sizes[k], c.Len, "message %d", k)
				require.Empty(t, firstDiff(bufs[k][:c.Len], msgs[k]), "message %d", k)
			}
			sent := 0
			for sent < len(sizes) {
				c, _ := pollAll(t, a, a, b)
				require.Contains(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, c.Context)
				sent++
			}
		})
	}
	require.Empty(t, leftovers(), "regions left behind")
}

// A sender whose bounce-chunk messages wait unexpected at the receiver
// may close: the messages stay whole (the entry is kept from new
// claimers until they are delivered), and a new sender gets through.
func TestBounceHeldAfterSenderCloses(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, b := openNode(t), openNode(t)
	defer b.close(t)
	toB := a.insert(t, b.name)
	msgs := [][]byte{pattern(make([]byte, 4096), 1), pattern(make([]byte, 500), 2)}
	for k, m := range msgs {
		require.NoError(t, a.ep.(ep.Msg).Send(m, nil, toB, k))
		_, _ = a.cq.Read(make([]eq.Completion, 1))
	}
	for range 50 {
		_, _ = b.cq.Read(nil)
	}
	a.close(t)
	for range 50 {
		_, _ = b.cq.Read(nil) // b sees the goodbye
	}
	c2 := openNode(t)
	defer c2.close(t)
	to2 := c2.insert(t, b.name)
	m3 := pattern(make([]byte, 3000), 3)
	for {
		err := c2.ep.(ep.Msg).Send(m3, nil, to2, 3)
		if err != fi.EAGAIN {
			require.NoError(t, err)
			break
		}
		_, _ = b.cq.Read(nil)
	}
	for range 50 {
		_, _ = b.cq.Read(nil)
		_, _ = c2.cq.Read(nil)
	}
	for k, want := range [][]byte{msgs[0], msgs[1], m3} {
		buf := make([]byte, 4096)
		require.NoError(t, b.ep.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, k))
		c, _ := pollAll(t, b, b, c2)
		require.Equal(t, k, c.Context)
		require.Empty(t, firstDiff(buf[:c.Len], want), "message %d", k)
	}
}

// The bounce-chunk data path (4 KiB, expected and unexpected) allocates
// nothing.
func TestBounceDataPathDoesNotAllocate(t *testing.T) {
	a, b := openNode(t), openNode(t)
	defer a.close(t)
	defer b.close(t)
	toB := a.insert(t, b.name)
	msg := make([]byte, 4096)
	rbuf := make([]byte, 4096)
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
		// Unexpected: sent first, held, then received.
		if err := a.ep.(ep.Msg).Send(msg, nil, toB, ctx); err != nil {
			panic(err)
		}
		for n := 0; n == 0; n, _ = a.cq.Read(comp) {
		}
		_, _ = b.cq.Read(nil)
		if err := b.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, ctx); err != nil {
			panic(err)
		}
		for n := 0; n == 0; n, _ = b.cq.Read(comp) {
		}
	}
	round()
	require.Zero(t, testing.AllocsPerRun(200, round))
}

// Large CMA messages are split (opGrant): the receiver reads the head
// while the sender writes the tail. Two endpoints that split messages to
// each other at once both finish, and every byte lands where it should,
// tagged or not, one segment or several at the sender.
func TestSplitBothWays(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, b := openNode(t), openNode(t)
	defer a.close(t)
	defer b.close(t)
	toB, toA := a.insert(t, b.name), b.insert(t, a.name)
	sizes := []int{32 << 10, 100<<10 + 3, 1 << 20, 40000}
	type side struct {
		n    *node
		to   fi.Addr
		msgs [][]byte
		bufs [][]byte
	}
	sides := []*side{{n: a, to: toB}, {n: b, to: toA}}
	for s, x := range sides {
		for k, size := range sizes {
			x.msgs = append(x.msgs, pattern(make([]byte, size), 10*s+k))
			x.bufs = append(x.bufs, make([]byte, size+100))
			if k%2 == 0 {
				require.NoError(t, x.n.ep.(ep.Msg).Recv(x.bufs[k], nil, fi.AddrUnspec, k))
			} else {
				require.NoError(t, x.n.ep.(ep.Tagged).TRecv(x.bufs[k], nil, fi.AddrUnspec, uint64(k), 0, k))
			}
		}
	}
	for k := range sizes {
		for _, x := range sides {
			m := x.msgs[k]
			var err error
			if k%2 == 0 {
				iov := [][]byte{m[:1000], m[1000 : len(m)/3], m[len(m)/3:]}
				err = x.n.ep.(ep.Msg).SendV(iov, nil, x.to, k)
			} else {
				err = x.n.ep.(ep.Tagged).TSend(m, nil, x.to, uint64(k), k)
			}
			require.NoError(t, err)
		}
	}
	var c [1]eq.Completion
	got := [2]int{}
	deadline := time.Now().Add(10 * time.Second)
	for got[0] < 2*len(sizes) || got[1] < 2*len(sizes) {
		require.True(t, time.Now().Before(deadline), "completions: %v of %d each", got, 2*len(sizes))
		for s, x := range sides {
			n, err := x.n.cq.Read(c[:])
			require.NotEqual(t, fi.EAVAIL, err)
			if n == 0 {
				continue
			}
			got[s]++
			if c[0].Flags&fi.FlagRecv != 0 {
				k := c[0].Context.(int)
				require.Equal(t, sizes[k], c[0].Len)
				require.Empty(t, firstDiff(x.bufs[k][:c[0].Len], sides[1-s].msgs[k]), "side %d message %d", s, k)
			}
		}
	}
}
