//go:build linux

package tcp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Peers that hold an RDM endpoint's receives without making progress
// (issue 16, finding 7): a rendezvous whose reads the peer never answers,
// or a message it stops sending half way. After FI_TCP_STALL_TIMEOUT
// without a byte of what it holds, the connection is dropped and the
// receives complete with fi.ETIMEDOUT error entries; other peers are not
// touched meanwhile or after.

const (
	stallTag  = 42 // the hostile peer's messages
	stallRecv = 100
)

// stallRecvs posts stallRecv tagged receives of 64 bytes for stallTag.
func stallRecvs(t *testing.T, v *hrRDM) {
	t.Helper()
	for i := range stallRecv {
		require.NoError(t, v.tagged().TRecv(make([]byte, 64), nil, fi.AddrUnspec, stallTag, 0, i))
	}
}

// TestRDMStalledRendezvous: a peer sends 100 rendezvous requests for the
// 100 posted receives and never answers the reads. Meanwhile a
// well-behaved peer's message arrives; after FI_TCP_STALL_TIMEOUT the 100
// receives fail with fi.ETIMEDOUT and the stalling peer loses its
// connection. (Without the timeout the receives were held for as long as
// the peer kept its connection open.)
func TestRDMStalledRendezvous(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_STALL_TIMEOUT", "1000")
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	v := openHostileRDM(t)
	defer v.close()
	g := openHostileRDM(t)
	defer g.close()
	toV, err := g.av.Insert([][]byte{v.name(t)}, 0)
	require.NoError(t, err)
	stallRecvs(t, v)
	r := hrConnect(t, v)
	defer r.c.Close()
	var reqs []byte
	for i := range stallRecv {
		reqs = append(reqs, hrRndvReq(r.connID, uint64(i+1), 1, stallTag, 64, hrRndvDesc(1, [3]uint64{0, 64, 0x77}))...)
	}
	r.send(t, reqs)
	// The endpoint reads them all: one read request each.
	rd := r.recv(t, v, 40*stallRecv)
	require.Equal(t, hrTCP(2, 0, 0, 1, 40, 40, 0, 64, 0x77), rd[:40])

	// Another peer's message arrives while the reads wait (or after the
	// timeout, on a slow machine: either way it is not disturbed).
	buf := make([]byte, 16)
	require.NoError(t, v.msg().Recv(buf, nil, fi.AddrUnspec, "other"))
	hrSendRetry(t, g, toV[0], []byte("meanwhile"), "g", v)
	timedOut := map[any]bool{}
	other := false
	var c [1]eq.Completion
	for deadline := time.Now().Add(hrDeadline); !other || len(timedOut) < stallRecv; {
		require.True(t, time.Now().Before(deadline), "other peer's message %v, %d receives timed out", other, len(timedOut))
		_, _ = g.cq.Read(nil)
		n, err := v.cq.Read(c[:])
		switch {
		case n == 1:
			require.Equal(t, "other", c[0].Context)
			require.Equal(t, "meanwhile", string(buf[:c[0].Len]))
			other = true
		case err == fi.EAVAIL:
			ce, err := v.cq.ReadErr()
			require.NoError(t, err)
			require.ErrorIs(t, ce, fi.ETIMEDOUT, "%+v", ce)
			require.False(t, timedOut[ce.Context], "receive %v failed twice", ce.Context)
			timedOut[ce.Context] = true
		}
	}
	hrNoComp(t, v.cq)
	hrRequireDropped(t, v, r.c)
	hrRequireServes(t, v, nil)
}

// TestRDMStalledMessage: a peer that stops half way through an eager
// message whose receive matched holds that receive until
// FI_TCP_STALL_TIMEOUT, then the receive fails with fi.ETIMEDOUT and the
// peer loses its connection.
func TestRDMStalledMessage(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_STALL_TIMEOUT", "500")
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	v := openHostileRDM(t)
	defer v.close()
	buf := make([]byte, 1000)
	require.NoError(t, v.tagged().TRecv(buf, nil, fi.AddrUnspec, stallTag, 0, "held"))
	r := hrConnect(t, v)
	defer r.c.Close()
	msg := hrRawTagged(stallTag, bytes.Repeat([]byte{'x'}, 1000))
	r.send(t, msg[:len(msg)-990]) // the header and 10 bytes
	ce := hrWaitErr(t, v.cq)
	require.Equal(t, "held", ce.Context)
	require.ErrorIs(t, ce, fi.ETIMEDOUT)
	hrRequireDropped(t, v, r.c)
	hrNoComp(t, v.cq)
	hrRequireServes(t, v, nil)
}

// TestRDMStalledRendezvousBlockedReader: the same stall while the
// application blocks in SRead (data progress then runs only on the
// connection's background goroutine): SRead returns with the error entry.
func TestRDMStalledRendezvousBlockedReader(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_STALL_TIMEOUT", "500")
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	v := openHostileRDM(t)
	defer v.close()
	require.NoError(t, v.tagged().TRecv(make([]byte, 64), nil, fi.AddrUnspec, stallTag, 0, "held"))
	r := hrConnect(t, v)
	defer r.c.Close()
	r.send(t, hrRndvReq(r.connID, 1, 1, stallTag, 64, hrRndvDesc(1, [3]uint64{0, 64, 0x77})))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var c [1]eq.Completion
	n, err := v.cq.SRead(ctx, c[:])
	require.Zero(t, n)
	require.ErrorIs(t, err, fi.EAVAIL, "SRead returns for the error entry")
	ce, err := v.cq.ReadErr()
	require.NoError(t, err)
	require.Equal(t, "held", ce.Context)
	require.ErrorIs(t, ce, fi.ETIMEDOUT)
}

// TestRDMSlowRendezvousNotStalled: a peer that answers a read slowly, a
// few bytes at a time with pauses shorter than FI_TCP_STALL_TIMEOUT, is
// making progress: the receive completes although the whole takes longer
// than the timeout.
func TestRDMSlowRendezvousNotStalled(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_STALL_TIMEOUT", "1000")
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	v := openHostileRDM(t)
	defer v.close()
	const size, step = 64, 4
	buf := make([]byte, size)
	require.NoError(t, v.tagged().TRecv(buf, nil, fi.AddrUnspec, stallTag, 0, "slow"))
	r := hrConnect(t, v)
	defer r.c.Close()
	r.send(t, hrRndvReq(r.connID, 5, 1, stallTag, size, hrRndvDesc(1, [3]uint64{0, size, 0x77})))
	require.Equal(t, hrTCP(2, 0, 0, 1, 40, 40, 0, size, 0x77), r.recv(t, v, 40))
	data := bytes.Repeat([]byte("slow"), size/4)
	rsp := append(hrTCP(3, 0, 0, 1, 16, 16+size), data...)
	r.send(t, rsp[:16])
	for off := 0; off < size; off += step {
		time.Sleep(100 * time.Millisecond) // 16 pauses: 1.6 s in all
		_, _ = v.cq.Read(nil)
		r.send(t, rsp[16+off:16+off+step])
	}
	done := r.recv(t, v, 80)
	require.Equal(t, byte(3), done[17], "read-done")
	c := hrWaitComp(t, v.cq)
	require.Equal(t, "slow", c.Context)
	require.Equal(t, data, buf)
	hrRequireOpen(t, r.c)
}

// hrConnectRecordPID is hrConnectRecord claiming listening port port for
// the process pid.
func hrConnectRecordPID(port uint16, pid uint32) []byte {
	rec := hrConnectRecord(port)
	binary.LittleEndian.PutUint64(rec[16:], uint64(pid)<<32)
	return rec
}

// TestRDMConnectRecordClaimsLivePeer: a connect record that claims the
// address of a peer whose connection is alive, from another process on
// the same IP, is refused with rxm's reject reason 2 ("already
// connected"), and the live peer's connection and messages are not
// touched. (It replaced the live connection, as C 1.17's rxm does, and
// the messages in flight on it were lost.) A peer whose connection is
// gone is still replaced by a restarted one.
func TestRDMConnectRecordClaimsLivePeer(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	v := openHostileRDM(t)
	defer v.close()
	g := openHostileRDM(t)
	defer g.close()
	toV, err := g.av.Insert([][]byte{v.name(t)}, 0)
	require.NoError(t, err)
	gap, _, err := fi.AddrPortFromSockaddr(g.name(t))
	require.NoError(t, err)

	// g's connection to v is up and carries a message.
	rbuf := make([]byte, 16)
	require.NoError(t, v.msg().Recv(rbuf, nil, fi.AddrUnspec, "r0"))
	hrSendRetry(t, g, toV[0], []byte("first"), "s0", v)
	require.Equal(t, "r0", hrWaitComp(t, v.cq, g.cq).Context)
	require.Equal(t, "s0", hrWaitComp(t, g.cq, v.cq).Context)

	// A forger claims g's address with another pid.
	forger := hrDial(t, v, hrConnectRecordPID(gap.Port(), uint32(os.Getpid())+1))
	got := hrRequireDropped(t, v, forger)
	require.Len(t, got, 32+2, "a tcp CM reject with a 2-byte record: %x", got)
	require.Equal(t, byte(6), got[1], "reject")
	require.Equal(t, []byte{1, 2}, got[32:], "reject record: version 1, reason 2 (already connected)")

	// g's connection is untouched: its next messages arrive, in order.
	for i, m := range []string{"second", "third"} {
		require.NoError(t, v.msg().Recv(rbuf, nil, fi.AddrUnspec, i))
		require.NoError(t, g.msg().Send([]byte(m), nil, toV[0], m))
		c := hrWaitComp(t, v.cq, g.cq)
		require.Equal(t, i, c.Context)
		require.Equal(t, m, string(rbuf[:c.Len]))
		require.Equal(t, m, hrWaitComp(t, g.cq, v.cq).Context)
	}

	// g goes; a process that takes its address over is accepted.
	g.close()
	heir := hrDial(t, v, hrConnectRecordPID(gap.Port(), uint32(os.Getpid())+2))
	resp := make([]byte, 32+16)
	require.NoError(t, heir.SetReadDeadline(time.Now().Add(hrDeadline)))
	for off := 0; off < len(resp); {
		_, _ = v.cq.Read(nil)
		n, err := heir.Read(resp[off:])
		off += n
		require.NoError(t, err)
	}
	require.Equal(t, byte(1), resp[1], "the restarted peer is accepted")
}
