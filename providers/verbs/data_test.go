//go:build verbs && cgo

package verbs

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// mrSize is each side's registered buffer in the data-path tests.
const mrSize = 1 << 20

// side is one end of a test connection: its rdma_cm id, CQ (with a
// completion channel), QP and registered buffer.
type side struct {
	ch *cmChannel
	id cmIDC
	cq *cq
	qp *qpRes
	mr *mr
}

// open gives s.id a CQ, a QP on it and a registered buffer, all freed at
// the test's end.
func (s *side) open(t *testing.T) {
	t.Helper()
	var err error
	s.cq, err = newCQ(s.id, 4*qpDepth) // rxe takes up to 127 WRs per queue of 64 (TestFlushOnPeerDestroy)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.cq.close()) })
	s.qp, err = createQP(s.id, s.cq)
	require.NoError(t, err)
	t.Cleanup(func() { destroyQP(s.id, s.qp) })
	s.mr, err = registerMR(s.qp.pd, mrSize, mrAccessAll)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.mr.close()) })
}

// connPair connects two sides over rdma_cm (the steps of
// TestCMRoundTrips) and returns the connector and the acceptor.
func connPair(t *testing.T) (cli, srv *side) {
	t.Helper()
	ip := rdmaAddr(t)
	cli, srv = &side{}, &side{}
	for _, s := range []*side{cli, srv} {
		ch, err := openCMChannel()
		require.NoError(t, err)
		t.Cleanup(ch.close)
		s.ch = ch
	}
	ln, err := createID(srv.ch.ch)
	require.NoError(t, err)
	t.Cleanup(func() { destroyID(ln) })
	require.NoError(t, bindAddr(ln, netip.AddrPortFrom(ip, 0)))
	require.NoError(t, listen(ln, 8))

	cli.id, err = createID(cli.ch.ch)
	require.NoError(t, err)
	t.Cleanup(func() { destroyID(cli.id) })
	require.NoError(t, resolveAddr(cli.id, netip.AddrPortFrom(ip, srcPort(ln)), 2000))
	nextOf(t, cli.ch, evAddrResolved)
	require.NoError(t, resolveRoute(cli.id, 2000))
	nextOf(t, cli.ch, evRouteResolved)
	cli.open(t)
	require.NoError(t, connect(cli.id, nil, cmRetryDefault))
	srv.id = nextOf(t, srv.ch, evConnectRequest).id
	t.Cleanup(func() { destroyID(srv.id) })
	srv.open(t)
	require.NoError(t, accept(srv.id, nil))
	nextOf(t, cli.ch, evEstablished)
	nextOf(t, srv.ch, evEstablished)
	return cli, srv
}

// waitN waits (through the completion channel) for n completions of c.
func waitN(t *testing.T, c *cq, n int) []completion {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []completion
	buf := make([]completion, pollBatch)
	for len(got) < n {
		k, err := c.wait(ctx, buf)
		require.NoError(t, err, "after %d of %d completions: %+v", len(got), n, got)
		got = append(got, buf[:k]...)
	}
	require.Len(t, got, n)
	return got
}

// fill writes a pattern seeded by seed into b.
func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}

// A registered buffer is mmap'd memory with both keys, writable through
// its Go view; it deregisters once.
func TestMR(t *testing.T) {
	cli, _ := connPair(t)
	m, err := registerMR(cli.qp.pd, 4096, mrAccessAll)
	require.NoError(t, err)
	require.Len(t, m.bytes(), 4096)
	require.NotZero(t, m.lkey)
	require.NotZero(t, m.rkey)
	require.Equal(t, m.addr(0)+10, m.addr(10))
	fill(m.bytes(), 1)
	require.Error(t, m.span(4000, 100), "past the end")
	require.ErrorIs(t, cli.qp.postRecv(1, m, 4000, 100), fi.EINVAL)
	require.NoError(t, m.close())
	require.NoError(t, m.close(), "a second close does nothing")
}

// Sends land in posted receives with their bytes: a small one (posted
// inline), 64 KiB (16 packets at rxe's MTU of 1024), and one with
// immediate data, which arrives at the receiver. Completions come back
// by wr_id through the slot table.
func TestSendRecv(t *testing.T) {
	cli, srv := connPair(t)
	t.Logf("max_inline_data: %d", cli.qp.maxInline)
	require.GreaterOrEqual(t, cli.qp.maxInline, 64)
	type msg struct{ off, n int }
	msgs := []msg{{0, 48}, {1 << 16, 1 << 16}, {3 << 16, 100}}
	rx, tx := newSlotTable[msg](8), newSlotTable[msg](8)
	for _, m := range msgs {
		id, err := rx.put(m)
		require.NoError(t, err)
		require.NoError(t, srv.qp.postRecv(id, srv.mr, m.off, 1<<16))
	}
	for i, m := range msgs {
		fill(cli.mr.bytes()[m.off:m.off+m.n], byte(i+1))
		id, err := tx.put(m)
		require.NoError(t, err)
		wr := sendWR{op: opSend, wrID: id, mr: cli.mr, off: m.off, n: m.n}
		if i == 2 {
			wr.op, wr.imm = opSendWithImm, 0xfeedf00d
		}
		require.NoError(t, cli.qp.postSend(wr))
	}
	for _, c := range waitN(t, cli.cq, len(msgs)) {
		require.Equal(t, wcSuccess, c.status)
		require.Equal(t, wcOpSend, c.opcode)
		_, ok := tx.take(c.wrID)
		require.True(t, ok)
	}
	for i, c := range waitN(t, srv.cq, len(msgs)) {
		require.Equal(t, wcSuccess, c.status)
		require.Equal(t, wcOpRecv, c.opcode)
		m, ok := rx.take(c.wrID)
		require.True(t, ok)
		require.Equal(t, msgs[i], m, "receives complete in order")
		require.EqualValues(t, m.n, c.byteLen)
		require.True(t, bytes.Equal(cli.mr.bytes()[m.off:m.off+m.n], srv.mr.bytes()[m.off:m.off+m.n]), "message %d", i)
		require.Equal(t, i == 2, c.hasImm)
		if c.hasImm {
			require.Equal(t, uint32(0xfeedf00d), c.immData)
		}
	}
	require.Zero(t, rx.inUse()+tx.inUse())
	_, ok := rx.take(0)
	require.False(t, ok, "a stale wr_id is refused")
}

// RDMA write and read move bytes to and from the peer's buffer by its
// rkey without the peer's CPU; a write with immediate data consumes a
// receive at the peer and delivers the imm there.
func TestRDMAWriteRead(t *testing.T) {
	cli, srv := connPair(t)
	const n = 40000
	fill(cli.mr.bytes()[:n], 3)
	require.NoError(t, cli.qp.postSend(sendWR{op: opWrite, wrID: 1, mr: cli.mr, off: 0, n: n,
		raddr: srv.mr.addr(4096), rkey: srv.mr.rkey}))
	c := waitN(t, cli.cq, 1)[0]
	c.byteLen = 0 // undefined for a write's completion (rxe gives the length)
	require.Equal(t, completion{wrID: 1, status: wcSuccess, opcode: wcOpRDMAWrite}, c)
	require.True(t, bytes.Equal(cli.mr.bytes()[:n], srv.mr.bytes()[4096:4096+n]), "written")

	fill(srv.mr.bytes()[1<<19:1<<19+n], 9)
	require.NoError(t, cli.qp.postSend(sendWR{op: opRead, wrID: 2, mr: cli.mr, off: 1 << 18, n: n,
		raddr: srv.mr.addr(1 << 19), rkey: srv.mr.rkey}))
	c = waitN(t, cli.cq, 1)[0]
	require.Equal(t, completion{wrID: 2, status: wcSuccess, opcode: wcOpRDMARead, byteLen: n}, c)
	require.True(t, bytes.Equal(srv.mr.bytes()[1<<19:1<<19+n], cli.mr.bytes()[1<<18:1<<18+n]), "read")

	require.NoError(t, srv.qp.postRecv(7, srv.mr, 0, 0))
	fill(cli.mr.bytes()[:100], 5)
	require.NoError(t, cli.qp.postSend(sendWR{op: opWriteWithImm, wrID: 3, mr: cli.mr, off: 0, n: 100,
		imm: 42, raddr: srv.mr.addr(8), rkey: srv.mr.rkey}))
	require.Equal(t, wcSuccess, waitN(t, cli.cq, 1)[0].status)
	c = waitN(t, srv.cq, 1)[0]
	require.Equal(t, completion{wrID: 7, status: wcSuccess, opcode: wcOpRecvRDMAImm, byteLen: 100, immData: 42, hasImm: true}, c)
	require.True(t, bytes.Equal(cli.mr.bytes()[:100], srv.mr.bytes()[8:108]))
}

// An RDMA write or read with a wrong rkey completes with an error status
// (the responder NAKs it: remote access error) and leaves the QP in the
// error state: the next work request is flushed.
func TestRDMABadRKey(t *testing.T) {
	for _, op := range []sendOp{opWrite, opRead} {
		t.Run(map[sendOp]string{opWrite: "write", opRead: "read"}[op], func(t *testing.T) {
			cli, srv := connPair(t)
			require.NoError(t, cli.qp.postSend(sendWR{op: op, wrID: 1, mr: cli.mr, n: 512,
				raddr: srv.mr.addr(0), rkey: srv.mr.rkey ^ 0x5a5a00}))
			c := waitN(t, cli.cq, 1)[0]
			require.EqualValues(t, 1, c.wrID)
			require.Equal(t, wcRemAccessErr.String(), c.status.String())
			require.NoError(t, cli.qp.postSend(sendWR{op: opSend, wrID: 2, mr: cli.mr, n: 8}))
			c = waitN(t, cli.cq, 1)[0]
			require.EqualValues(t, 2, c.wrID)
			require.Equal(t, wcWRFlushErr.String(), c.status.String(), "the QP is in error")
			// On rxe the responder's QP stays out of the error state: a
			// receive posted there is not flushed.
			require.NoError(t, srv.qp.postRecv(3, srv.mr, 0, 64))
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := srv.cq.wait(ctx, make([]completion, 1))
			require.ErrorIs(t, err, fi.ETIMEDOUT, "the responder's receive stays posted")
		})
	}
}

// A wait for a completion parks in the netpoller on the completion
// channel: an idle wait ends with its context's deadline having taken no
// channel event, and a wait that a later send satisfies wakes on exactly
// one event (no busy polling).
func TestCQWait(t *testing.T) {
	cli, srv := connPair(t)
	buf := make([]completion, pollBatch)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	start := time.Now()
	_, err := srv.cq.wait(ctx, buf)
	cancel()
	require.ErrorIs(t, err, fi.ETIMEDOUT)
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	require.Zero(t, srv.cq.events)

	require.NoError(t, srv.qp.postRecv(5, srv.mr, 0, 64))
	done := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		done <- cli.qp.postSend(sendWR{op: opSend, wrID: 6, mr: cli.mr, n: 64})
	}()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := srv.cq.wait(ctx, buf)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, 1, n)
	require.Equal(t, completion{wrID: 5, status: wcSuccess, opcode: wcOpRecv, byteLen: 64}, buf[0])
	require.EqualValues(t, 1, srv.cq.events, "woken by one channel event")
	waitN(t, cli.cq, 1)
}

// When the peer disconnects and destroys its QP, every operation posted
// here (as many as the queues take) completes, in error: receives waiting for data and sends stuck in
// RNR retry (the peer posted no receive) are all flushed
// (IBV_WC_WR_FLUSH_ERR) once this side answers the DISCONNECTED event
// with its own rdma_disconnect, which moves the QP to the error state
// (the event alone changes nothing: librdmacm leaves the QP to the user).
func TestFlushOnPeerDestroy(t *testing.T) {
	cli, srv := connPair(t)
	// Fill both queues: a full queue answers a bare fi.EAGAIN.
	nr, ns := 0, 0
	for ; ; nr++ {
		err := cli.qp.postRecv(uint64(1000+nr), cli.mr, nr*4096, 4096)
		if err != nil {
			require.Equal(t, fi.EAGAIN, err)
			break
		}
	}
	for ; ; ns++ {
		err := cli.qp.postSend(sendWR{op: opSend, wrID: uint64(2000 + ns), mr: cli.mr, off: 1 << 19, n: 1000})
		if err != nil {
			require.Equal(t, fi.EAGAIN, err)
			break
		}
	}
	t.Logf("queues full at %d receives and %d sends; the CQ has %d entries", nr, ns, cli.cq.cqe)
	// rxe reports the max_recv_wr and max_send_wr asked for but refuses
	// only when its ring (rounded up to a power of two) is full: the
	// provider must count its own work requests against the caps.
	require.GreaterOrEqual(t, nr, cli.qp.maxRecvWR)
	require.GreaterOrEqual(t, ns, cli.qp.maxSendWR)
	require.GreaterOrEqual(t, cli.cq.cqe, nr+ns, "room for every completion")
	buf := make([]completion, pollBatch)
	n, err := cli.cq.poll(buf)
	require.NoError(t, err)
	require.Zero(t, n, "nothing completes while the peer has no receive")

	require.NoError(t, disconnect(srv.id))
	destroyQP(srv.id, srv.qp)
	nextOf(t, cli.ch, evDisconnected)
	n, err = cli.cq.poll(buf)
	require.NoError(t, err)
	require.Zero(t, n, "the DISCONNECTED event alone flushes nothing")
	require.NoError(t, disconnect(cli.id))
	got := waitN(t, cli.cq, nr+ns)
	seen := map[uint64]bool{}
	for _, c := range got {
		require.Equal(t, wcWRFlushErr.String(), c.status.String(), "wr_id %d", c.wrID)
		seen[c.wrID] = true
	}
	require.Len(t, seen, nr+ns, "every posted operation completes once")
	n, err = cli.cq.poll(buf)
	require.NoError(t, err)
	require.Zero(t, n)
}

// A post_send + poll round on the fast path allocates nothing: a receive
// posted at the peer, an inline send, both completions polled, wr_ids
// through slot tables.
func TestFastPathAllocs(t *testing.T) {
	cli, srv := connPair(t)
	rx, tx := newSlotTable[int](16), newSlotTable[int](16)
	cbuf, sbuf := make([]completion, pollBatch), make([]completion, pollBatch)
	round := func() {
		id, _ := rx.put(1)
		if err := srv.qp.postRecv(id, srv.mr, 0, 4096); err != nil {
			panic(err)
		}
		id, _ = tx.put(2)
		if err := cli.qp.postSend(sendWR{op: opSend, wrID: id, mr: cli.mr, n: 32}); err != nil {
			panic(err)
		}
		for got := 0; got < 2; {
			if n, _ := cli.cq.poll(cbuf); n == 1 && cbuf[0].status == wcSuccess {
				tx.take(cbuf[0].wrID)
				got++
			}
			if n, _ := srv.cq.poll(sbuf); n == 1 && sbuf[0].status == wcSuccess {
				rx.take(sbuf[0].wrID)
				got++
			}
		}
	}
	round()
	require.Zero(t, testing.AllocsPerRun(200, round))
	require.Zero(t, rx.inUse()+tx.inUse())
}
