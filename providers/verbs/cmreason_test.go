//go:build verbs && cgo

package verbs

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// connectErr connects c to dest with the connect timeout timeoutMS (0:
// the provider's) and returns the error entry that ends the attempt and
// how long it took.
func connectErr(t *testing.T, c *tside, dest []byte, timeoutMS int) (*eq.EQError, time.Duration) {
	t.Helper()
	if timeoutMS > 0 {
		require.NoError(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnTimeout, timeoutMS))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, c.ep.(ep.CM).Connect(dest, []byte("hi")))
	ev, err := c.eq.SRead(ctx)
	took := time.Since(start)
	require.ErrorIs(t, err, fi.EAVAIL, "event %v where an error entry was due", ev)
	e, err := c.eq.ReadErr()
	require.NoError(t, err)
	require.Same(t, c.ep, e.Fid)
	return e, took
}

// withPort returns the sockaddr name with its port replaced.
func withPort(name []byte, port uint16) []byte {
	out := append([]byte(nil), name...)
	binary.BigEndian.PutUint16(out[2:4], port)
	return out
}

// sockaddrOf returns ap as a sockaddr.
func sockaddrOf(t *testing.T, ap netip.AddrPort) []byte {
	t.Helper()
	_, b, err := fi.SockaddrFromAddrPort(ap)
	require.NoError(t, err)
	return b
}

// freePort returns a port rdma_cm gives an id bound to ip, free again
// once returned.
func freePort(t *testing.T, ip netip.Addr) uint16 {
	t.Helper()
	ch, err := openCMChannel()
	require.NoError(t, err)
	defer ch.close()
	id, err := createID(ch.ch)
	require.NoError(t, err)
	defer destroyID(id)
	require.NoError(t, bindAddr(id, netip.AddrPortFrom(ip, 0)))
	return srcPort(id)
}

// TestConnFailureReasons: each cause of a failed connection attempt
// arrives as an error entry with its own eq.ConnReason, its code, and
// the provider's ProvErrno (the IB CM reject reason for a REJ): a reject
// by the peer's application with and without data, nothing listening on
// the port (the IB CM's "invalid service ID"), a listener whose backlog
// is full (the provider's own reject, tagged), a listener that never
// answers (the kernel's CM acknowledges the request with an MRA and
// then waits for minutes: the endpoint's connect timeout ends it), and
// an address with no route. The endpoint's state tells a reject from a
// failure.
func TestConnFailureReasons(t *testing.T) {
	ip := rdmaAddr(t)
	l := openListener(t, msgHints(false))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	// The listener's application rejects with the data the next row
	// asks for.
	rejectWith := make(chan []byte, 1)
	go func() {
		for {
			ev, err := l.eq.SRead(ctx)
			if err != nil {
				return
			}
			if req, ok := ev.(*eq.ConnReq); ok {
				_ = l.pep.Reject(req.Info.Handle, <-rejectWith)
			}
		}
	}()

	// A listener with a backlog of one, whose one request stays pending,
	// and one that never answers.
	full := openListener(t, msgHints(false))
	require.NoError(t, full.pep.(ep.BacklogSetter).SetBacklog(1))
	first := openSide(t, full.fab, full.info)
	require.NoError(t, first.ep.(ep.CM).Connect(full.name, nil))
	require.IsType(t, &eq.ConnReq{}, nextEvent(t, full.eq))
	silent := openListener(t, msgHints(false))

	// An address with no route: TEST-NET-1, where the host (the
	// Soft-RoCE VM) routes nothing, so that no packet leaves it.
	unroutable := netip.MustParseAddrPort("192.0.2.1:7471")
	if c, err := net.Dial("udp4", unroutable.String()); err == nil {
		c.Close()
		t.Fatalf("this host has a route to %v; the unreachable case needs an address without one (the Soft-RoCE VM has no default route)", unroutable)
	}

	for _, tc := range []struct {
		name      string
		dest      []byte
		reject    []byte // the rejecting application's data
		timeoutMS int
		code      fi.Errno
		prov      int // the ProvErrno, -1: any
		reason    eq.ConnReason
		data      string
		state     ep.CMState
	}{
		{name: "reject with data", dest: l.name, reject: []byte("not you"), code: fi.ECONNREFUSED,
			prov: int(RejectConsumer), reason: eq.ReasonRejected, data: "not you", state: ep.CMRejected},
		{name: "reject without data", dest: l.name, code: fi.ECONNREFUSED,
			prov: int(RejectConsumer), reason: eq.ReasonRejected, state: ep.CMRejected},
		{name: "nothing listening", dest: withPort(l.name, freePort(t, ip)), code: fi.ECONNREFUSED,
			prov: int(RejectInvalidServiceID), reason: eq.ReasonNoListener, state: ep.CMFailed},
		{name: "backlog full", dest: full.name, code: fi.ECONNREFUSED,
			prov: int(RejectConsumer), reason: eq.ReasonBacklogFull, state: ep.CMFailed},
		{name: "timeout", dest: silent.name, timeoutMS: 1000, code: fi.ETIMEDOUT,
			prov: -1, reason: eq.ReasonTimedOut, state: ep.CMFailed},
		{name: "unreachable", dest: sockaddrOf(t, unroutable), code: fi.ENETUNREACH,
			prov: -1, reason: eq.ReasonUnreachable, state: ep.CMFailed},
		// An address of the device's subnet that nobody holds: rdma_cm's
		// address resolution gets no ARP answer and reports ADDR_ERROR
		// with -ETIMEDOUT after its timeout (2 s). Only in the Soft-RoCE
		// VM, whose eth0 is on a hub with no other port.
		{name: "no neighbour", dest: noNeighbour(t, ip), code: fi.ETIMEDOUT,
			prov: int(syscall.ETIMEDOUT), reason: eq.ReasonTimedOut, state: ep.CMFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dest == nil {
				t.Skipf("the device's address %v is not the Soft-RoCE VM's %v: no address of its subnet is known to be free and local", ip, vmAddr)
			}
			if string(tc.dest) == string(l.name) {
				rejectWith <- tc.reject
			}
			c := openSide(t, l.fab, l.info)
			e, took := connectErr(t, c, tc.dest, tc.timeoutMS)
			t.Logf("%s: %v after %v", tc.name, e, took.Round(time.Millisecond))
			require.Equal(t, tc.reason, e.Reason, "%v", e)
			require.Equal(t, tc.reason, eq.ReasonOf(e))
			if tc.code == fi.ENETUNREACH {
				require.Contains(t, []fi.Errno{fi.ENETUNREACH, fi.EHOSTUNREACH}, e.Err)
			} else {
				require.Equal(t, tc.code, e.Err)
			}
			if tc.prov >= 0 {
				require.Equal(t, tc.prov, e.ProvErrno)
			}
			require.Equal(t, tc.data, string(e.ErrData))
			st, err := ep.State(c.ep)
			require.NoError(t, err)
			require.Equal(t, tc.state, st)
			if tc.timeoutMS > 0 {
				require.GreaterOrEqual(t, took, time.Duration(tc.timeoutMS)*time.Millisecond)
			}
		})
	}
}

// vmAddr is the guest's address in the Soft-RoCE VM (run-in-vm.sh).
var vmAddr = netip.MustParseAddr("10.66.0.1")

// noNeighbour returns a sockaddr of the VM's subnet that no host holds,
// or nil outside the VM.
func noNeighbour(t *testing.T, ip netip.Addr) []byte {
	if ip != vmAddr {
		return nil
	}
	return sockaddrOf(t, netip.MustParseAddrPort("10.66.0.200:7471"))
}

// TestConnTimeoutOption: ep.OptConnTimeout ends a connection attempt to
// a peer that never answers after the set time (500 ms), where the
// provider's default lets the kernel's CM wait (for minutes, after the
// listener's MRA); the attempt's id is destroyed then, and the endpoint
// closes cleanly. The options' defaults, bounds and read-only state.
func TestConnTimeoutOption(t *testing.T) {
	silent := openListener(t, msgHints(false))

	c := openSide(t, silent.fab, silent.info)
	for _, o := range []struct {
		name ep.OptName
		want int
	}{{ep.OptConnTimeout, 0}, {ep.OptConnRetries, 7}, {ep.OptConnState, int(ep.CMIdle)}} {
		v, err := ep.GetOpt(c.ep, ep.OptLevelCM, o.name)
		require.NoError(t, err)
		require.Equal(t, o.want, v, "option %d", o.name)
	}
	v, err := ep.GetOpt(c.ep, ep.OptLevelEndpoint, ep.OptCMDataSize)
	require.NoError(t, err)
	require.Equal(t, 55, v, "FI_OPT_CM_DATA_SIZE")
	require.ErrorIs(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnRetries, 8), fi.EINVAL)
	require.ErrorIs(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnRetries, -1), fi.EINVAL)
	require.ErrorIs(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnTimeout, -1), fi.EINVAL)
	require.ErrorIs(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnState, 0), fi.ENOPROTOOPT)
	require.ErrorIs(t, ep.SetOpt(c.ep, ep.OptLevelEndpoint, ep.OptCMDataSize, 10), fi.ENOPROTOOPT)
	_, err = ep.GetOpt(c.ep, ep.OptLevel(7), ep.OptConnTimeout)
	require.ErrorIs(t, err, fi.ENOPROTOOPT)

	e, took := connectErr(t, c, silent.name, 500)
	t.Logf("timed out: %v after %v", e, took.Round(time.Millisecond))
	require.Equal(t, fi.ETIMEDOUT, e.Err)
	require.Equal(t, eq.ReasonTimedOut, e.Reason)
	require.GreaterOrEqual(t, took, 500*time.Millisecond)
	require.Less(t, took, 1500*time.Millisecond, "well before the default")
	require.ErrorIs(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnTimeout, 100), fi.EOPBADSTATE, "after Connect")
	v, err = ep.GetOpt(c.ep, ep.OptLevelCM, ep.OptConnState)
	require.NoError(t, err)
	require.Equal(t, int(ep.CMFailed), v)
	raw := c.ep.(*endpoint)
	raw.cmMu.Lock()
	gone := raw.idGone
	raw.cmMu.Unlock()
	require.True(t, gone, "the attempt's id is destroyed at the timeout")

	// The listener got the request (and the CM answered it with an MRA);
	// without a timeout of its own, a second endpoint is still waiting
	// well after 500 ms.
	require.IsType(t, &eq.ConnReq{}, nextEvent(t, silent.eq))
	d := openSide(t, silent.fab, silent.info)
	require.NoError(t, d.ep.(ep.CM).Connect(silent.name, nil))
	require.IsType(t, &eq.ConnReq{}, nextEvent(t, silent.eq))
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	ev, err := d.eq.SRead(ctx)
	require.Error(t, err, "the default waits longer than 1.5 s; got %v", ev)
	require.NotErrorIs(t, err, fi.EAVAIL)
	require.Equal(t, ep.CMConnecting, d.ep.(ep.Stater).CMState())
	require.NoError(t, d.ep.Close())
	require.NoError(t, c.ep.Close())
}

// TestSetNameActive: SetName on an active endpoint (fi_setname, as C's
// vrb_msg_ep_setname) binds the source address Connect's request leaves
// from: the listener's eq.ConnReq shows it as its Info's DestAddr, the
// accepted endpoint as its Peer, and the endpoint as its Name. It works
// after Enable too, moving the queue pair to the new id, but not with
// receives posted (fi.EBUSY) nor after Connect (fi.EOPBADSTATE).
func TestSetNameActive(t *testing.T) {
	ip := rdmaAddr(t)
	l := openListener(t, msgHints(false))
	c := openSide(t, l.fab, l.info)
	port := freePort(t, ip)
	src := sockaddrOf(t, netip.AddrPortFrom(ip, port))
	require.ErrorIs(t, c.ep.(ep.Namer).SetName([]byte{1, 2}), fi.EINVAL)
	require.NoError(t, c.ep.(ep.Namer).SetName(src))
	name := make([]byte, 128)
	n, err := c.ep.(ep.Namer).Name(name)
	require.NoError(t, err)
	require.Equal(t, src, name[:n])

	buf := make([]byte, 64)
	mr := register(t, c, buf, fi.AccessRecv)
	require.NoError(t, c.ep.(ep.Msg).Recv(buf, mr.Desc(), fi.AddrUnspec, nil))
	require.ErrorIs(t, c.ep.(ep.Namer).SetName(src), fi.EBUSY, "a receive is posted")

	require.NoError(t, c.ep.(ep.CM).Connect(l.name, nil))
	require.ErrorIs(t, c.ep.(ep.Namer).SetName(src), fi.EOPBADSTATE)
	req, ok := nextEvent(t, l.eq).(*eq.ConnReq)
	require.True(t, ok)
	require.Equal(t, src, req.Info.DestAddr, "the request comes from the name set")
	s := openSide(t, l.fab, req.Info)
	require.NoError(t, s.ep.(ep.CM).Accept(nil))
	require.IsType(t, &eq.Connected{}, nextEvent(t, s.eq))
	require.IsType(t, &eq.Connected{}, nextEvent(t, c.eq))
	n, err = s.ep.(ep.CM).Peer(name)
	require.NoError(t, err)
	require.Equal(t, src, name[:n])

	// The receive posted on the queue pair SetName moved completes.
	smsg := []byte("after setname")
	require.NoError(t, s.ep.(ep.Msg).Inject(smsg, fi.AddrUnspec))
	got, e := c.next(t)
	require.Nil(t, e)
	require.Equal(t, smsg, buf[:got.Len])
}

// TestConnParams: the connection parameters C's verbs passes
// (vrb_ep_prepare_rdma_cm_param, vrb_msg_ep_connect) reach both queue
// pairs: initiator depth and responder resources as RDMA_MAX_INIT_DEPTH
// and RDMA_MAX_RESP_RES resolve them (the device's max_qp_init_rd_atom
// and max_qp_rd_atom, the acceptor's clamped to the request's), the
// transport retry count 15 as the kernel sends it (7) or the endpoint's
// ep.OptConnRetries, and the RNR retry count 7. The states through
// connect and shutdown, at both ends, and the time-wait's end.
func TestConnParams(t *testing.T) {
	devs, err := queryDevices(defTxSize, defRxSize, defTxIOVLimit, defRxIOVLimit, defInlineSize)
	require.NoError(t, err)
	require.NotEmpty(t, devs)
	depth := min(devs[0].maxReadInit, devs[0].maxReadResp)
	l := openListener(t, msgHints(false))
	st, err := ep.State(l.pep)
	require.NoError(t, err)
	require.Equal(t, ep.CMListening, st)
	v, err := ep.GetOpt(l.pep, ep.OptLevelEndpoint, ep.OptCMDataSize)
	require.NoError(t, err)
	require.Equal(t, 55, v, "FI_OPT_CM_DATA_SIZE on the passive endpoint")
	v, err = ep.GetOpt(l.pep, ep.OptLevelCM, ep.OptConnState)
	require.NoError(t, err)
	require.Equal(t, int(ep.CMListening), v)
	require.ErrorIs(t, ep.SetOpt(l.pep, ep.OptLevelEndpoint, ep.OptCMDataSize, 1), fi.ENOPROTOOPT)

	for _, retries := range []int{-1, 3} {
		c := openSide(t, l.fab, l.info)
		require.Equal(t, ep.CMIdle, c.ep.(ep.Stater).CMState())
		want := 7
		if retries >= 0 {
			require.NoError(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnRetries, retries))
			want = retries
		}
		require.NoError(t, c.ep.(ep.CM).Connect(l.name, nil))
		require.Equal(t, ep.CMConnecting, c.ep.(ep.Stater).CMState())
		req, ok := nextEvent(t, l.eq).(*eq.ConnReq)
		require.True(t, ok)
		s := openSide(t, l.fab, req.Info)
		require.Equal(t, ep.CMReqReceived, s.ep.(ep.Stater).CMState())
		require.NoError(t, s.ep.(ep.CM).Accept(nil))
		require.IsType(t, &eq.Connected{}, nextEvent(t, s.eq))
		require.IsType(t, &eq.Connected{}, nextEvent(t, c.eq))
		for i, side := range []*tside{c, s} {
			require.Equal(t, ep.CMConnected, side.ep.(ep.Stater).CMState())
			e := side.ep.(*endpoint)
			e.mu.Lock()
			init, resp, err := qpReadDepth(e.dp.qp)
			require.NoError(t, err)
			retry, rnr, err := qpRetry(e.dp.qp)
			require.NoError(t, err)
			e.mu.Unlock()
			t.Logf("side %d: initiator depth %d, responder resources %d, retry %d, rnr retry %d", i, init, resp, retry, rnr)
			require.Equal(t, depth, init, "initiator depth, side %d", i)
			require.Equal(t, depth, resp, "responder resources, side %d", i)
			require.Equal(t, want, retry, "retry count, side %d", i)
			require.Equal(t, 7, rnr, "rnr retry count, side %d", i)
		}

		require.NoError(t, c.ep.(ep.CM).Shutdown(0))
		// The peer's answer may have come already.
		require.Contains(t, []ep.CMState{ep.CMShutdownLocal, ep.CMDisconnected}, c.ep.(ep.Stater).CMState())
		require.IsType(t, &eq.Shutdown{}, nextEvent(t, c.eq))
		require.IsType(t, &eq.Shutdown{}, nextEvent(t, s.eq))
		require.Equal(t, ep.CMShutdownRemote, s.ep.(ep.Stater).CMState())
		require.NoError(t, s.ep.(ep.CM).Shutdown(0))
		require.Equal(t, ep.CMDisconnected, s.ep.(ep.Stater).CMState())
		require.Eventually(t, func() bool { return c.ep.(ep.Stater).CMState() == ep.CMDisconnected },
			5*time.Second, 10*time.Millisecond, "the connector hears the peer's disconnect")
		if retries < 0 {
			// rdma_cm reports the end of the time-wait (TIMEWAIT_EXIT),
			// and the endpoint takes it without an event.
			e := c.ep.(*endpoint)
			require.Eventually(t, e.timewaitExit.Load, 15*time.Second, 20*time.Millisecond, "TIMEWAIT_EXIT")
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_, err := c.eq.SRead(ctx)
			cancel()
			require.Error(t, err, "no event for TIMEWAIT_EXIT")
		}
		require.NoError(t, c.ep.Close())
		require.Equal(t, ep.CMClosed, c.ep.(ep.Stater).CMState())
	}
	require.NoError(t, l.pep.Close())
	require.Equal(t, ep.CMClosed, l.pep.(ep.Stater).CMState())
}

// TestCMEventsDelivered: the rdma_cm events C's verbs turns into error
// entries besides a failed attempt, delivered here to real endpoints as
// the dispatcher would (Soft-RoCE raises no ADDR_CHANGE, which comes from
// a bonding failover; TestDeviceRemoval removes the device for real, in
// a VM of its own): DEVICE_REMOVAL on a listening passive endpoint is an
// fi.ENODEV error entry from it; ADDR_CHANGE on a connected endpoint an
// fi.EADDRNOTAVAIL one that leaves the connection up; TIMEWAIT_EXIT no
// entry.
func TestCMEventsDelivered(t *testing.T) {
	c, s := testPair(t)
	ce := c.ep.(*endpoint)
	ce.cmEvent(cmEventC{id: ce.id, typ: evAddrChange})
	e, ok := nextEvent(t, c.eq).(*eq.EQError)
	require.True(t, ok)
	require.Equal(t, fi.EADDRNOTAVAIL, e.Err)
	require.Equal(t, eq.ReasonTransport, e.Reason)
	require.Equal(t, ep.CMConnected, ce.CMState())
	msg := []byte("still up")
	require.NoError(t, c.ep.(ep.Msg).Inject(msg, fi.AddrUnspec))
	buf := make([]byte, 16)
	mr := register(t, s, buf, fi.AccessRecv)
	require.NoError(t, s.ep.(ep.Msg).Recv(buf, mr.Desc(), fi.AddrUnspec, nil))
	got, ce2 := s.next(t)
	require.Nil(t, ce2)
	require.Equal(t, msg, buf[:got.Len])

	ce.cmEvent(cmEventC{id: ce.id, typ: evTimewaitExit})
	require.True(t, ce.timewaitExit.Load())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := c.eq.SRead(ctx)
	cancel()
	require.Error(t, err, "no event for TIMEWAIT_EXIT")

	l := openListener(t, msgHints(false))
	p := l.pep.(*passiveEP)
	p.cmEvent(cmEventC{id: p.id, typ: evDeviceRemoval})
	e, ok = nextEvent(t, l.eq).(*eq.EQError)
	require.True(t, ok)
	require.Equal(t, fi.ENODEV, e.Err)
	require.Equal(t, eq.ReasonTransport, e.Reason)
	require.Same(t, l.pep, e.Fid)
}
