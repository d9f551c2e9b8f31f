//go:build linux

package tcp_test

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// cmRequest is a valid 1.17 CM connect request with data (docs/wire-tcp.md, §2.3).
func cmRequest(data []byte) []byte {
	b := make([]byte, 32, 32+len(data))
	b[0], b[1] = 3, 0
	binary.BigEndian.PutUint16(b[2:], uint16(len(data)))
	b[24] = 1
	return append(b, data...)
}

// rawPeer connects a plain TCP socket to the server's passive endpoint,
// sends req, and lets the server accept it; it returns the socket after
// reading the server's CM answer, and the server side.
func rawPeer(t *testing.T, req []byte) (net.Conn, *side, func()) {
	t.Helper()
	f, q, pep, name := listen(t)
	ap, _, err := fi.AddrPortFromSockaddr(name)
	require.NoError(t, err)
	c, err := net.Dial("tcp", ap.String())
	require.NoError(t, err)
	_, err = c.Write(req)
	require.NoError(t, err)
	ev := waitEvent(t, q)
	cr, ok := ev.(*eq.ConnReq)
	require.True(t, ok, "got %T %v", ev, ev)
	s := &side{}
	openSide(t, s, f, q, cr.Info)
	require.NoError(t, s.cm().Accept(nil))
	require.IsType(t, &eq.Connected{}, waitEvent(t, q))
	resp := make([]byte, 32)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = readFull(c, resp)
	require.NoError(t, err)
	require.Equal(t, byte(1), resp[1], "accept message type")
	return c, s, func() {
		c.Close()
		s.close(t)
		require.NoError(t, pep.Close())
		require.NoError(t, q.Close())
		require.NoError(t, f.Close())
	}
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := c.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// A peer that breaks the data protocol loses its connection: the endpoint
// reports one eq.Shutdown, its posted receive completes with an error
// entry, its memory is untouched, and nothing panics.
func TestHostilePeerHeaders(t *testing.T) {
	cleanEnv(t)
	hdr := func(op, flags, opData, rmaCnt, hdrSize byte, size uint64, ext ...uint64) []byte {
		b := []byte{3, op, flags, 0, opData, rmaCnt, hdrSize, 0}
		b = binary.LittleEndian.AppendUint64(b, size)
		for _, v := range ext {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		return b
	}
	tests := []struct {
		name string
		wire []byte
	}{
		{"bad version", append([]byte{9}, hdr(0, 0, 0, 0, 16, 20)[1:]...)},
		{"unknown op", hdr(7, 0, 0, 0, 16, 16)},
		{"header size lies", hdr(0, 0, 0, 0, 120, 200)},
		{"size below header", hdr(0, 0, 0, 0, 16, 3)},
		{"unknown flag", hdr(0, 0x40, 0, 0, 16, 16)},
		{"ack nobody asked for", hdr(0, 0, 2, 0, 16, 16)},
		{"read response without request", hdr(3, 0, 0, 0, 16, 24)},
		{"write to an unknown key", append(hdr(4, 0, 0, 1, 40, 48, 0, 8, 0xbad), make([]byte, 8)...)},
		{"read of an unknown key", hdr(2, 0, 0, 1, 40, 40, 0, 8, 0xbad)},
		{"tagged on a msg endpoint", append(hdr(1, 0, 0, 0, 24, 24, 7), make([]byte, 0)...)},
		{"too many rma iovs", hdr(4, 0, 0, 5, 136, 136)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			c, s, done := rawPeer(t, cmRequest(nil))
			defer done()
			buf := make([]byte, 64)
			require.NoError(t, s.msg().Recv(buf, nil, fi.AddrUnspec, "posted"))
			_, err := c.Write(tt.wire)
			require.NoError(t, err)
			require.IsType(t, &eq.Shutdown{}, waitEvent(t, s.eq))
			var comp [1]eq.Completion
			_, err = s.cq.Read(comp[:])
			require.ErrorIs(t, err, fi.EAVAIL)
			ce, err := s.cq.ReadErr()
			require.NoError(t, err)
			require.Equal(t, "posted", ce.Context)
			require.Equal(t, fi.ECANCELED, ce.Err)
			require.Equal(t, make([]byte, 64), buf, "the posted buffer was written")
			// The peer sees the connection end.
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = c.Read(make([]byte, 1))
			require.Error(t, err)
			require.ErrorIs(t, s.msg().Send([]byte("x"), nil, fi.AddrUnspec, nil), fi.ESHUTDOWN)
		})
	}
}

// A CM request that breaks the protocol (bad version, oversize private
// data, wrong type) never becomes a ConnReq; the socket is closed.
func TestHostileConnectRequests(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f, q, pep, name := listen(t)
	defer func() {
		require.NoError(t, pep.Close())
		require.NoError(t, q.Close())
		require.NoError(t, f.Close())
	}()
	ap, _, err := fi.AddrPortFromSockaddr(name)
	require.NoError(t, err)
	bad := map[string][]byte{
		"version 2":           append([]byte{2}, cmRequest(nil)[1:]...),
		"accept as request":   append([]byte{3, 1}, cmRequest(nil)[2:]...),
		"257 bytes of data":   append(cmRequest(nil)[:2], append([]byte{1, 1}, append(cmRequest(nil)[4:], make([]byte, 257)...)...)...),
		"no endianness probe": append(cmRequest(nil)[:24], make([]byte, 8)...),
	}
	for name, req := range bad {
		c, err := net.Dial("tcp", ap.String())
		require.NoError(t, err, name)
		_, err = c.Write(req)
		require.NoError(t, err, name)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 64))
		require.Error(t, err, "%s: the socket must be closed without an answer", name)
		require.NotErrorIs(t, err, context.DeadlineExceeded, name)
		c.Close()
	}
	_, err = q.Read()
	require.ErrorIs(t, err, fi.EAGAIN, "no ConnReq for a malformed request")
}

// Connecting to a peer that accepts the TCP connection but never answers
// fails with ETIMEDOUT after FI_TCP_CONN_TIMEOUT; connecting to a port
// nobody listens on fails with ECONNREFUSED.
func TestConnectTimeoutAndRefused(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Setenv("FI_TCP_CONN_TIMEOUT", "300")
	silent, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	closed, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().(*net.TCPAddr).AddrPort()
	closed.Close()

	for _, tt := range []struct {
		addr netip.AddrPort
		want fi.Errno
	}{
		{silent.Addr().(*net.TCPAddr).AddrPort(), fi.ETIMEDOUT},
		{closedAddr, fi.ECONNREFUSED},
	} {
		info := loInfo(t)
		f, err := fi.OpenFabric(info)
		require.NoError(t, err)
		q, err := eq.OpenEQ(f, nil)
		require.NoError(t, err)
		s := &side{}
		openSide(t, s, f, q, info)
		_, name, err := fi.SockaddrFromAddrPort(tt.addr)
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, s.cm().Connect(name, nil))
		ev := waitEvent(t, q)
		ee, ok := ev.(*eq.EQError)
		require.True(t, ok, "got %T %v", ev, ev)
		require.Equal(t, tt.want, ee.Err)
		require.Equal(t, s.ep, ee.Fid)
		require.Less(t, time.Since(start), 9*time.Second, "bounded by the connect timeout")
		require.ErrorIs(t, s.msg().Send([]byte("x"), nil, fi.AddrUnspec, nil), fi.ENOTCONN)
		require.ErrorIs(t, s.cm().Shutdown(0), fi.ENOTCONN)
		s.close(t)
		require.NoError(t, q.Close())
		require.NoError(t, f.Close())
	}
}

// RMA that the target does not grant fails at the initiator and leaves
// the target's memory alone; granted RMA works both ways.
func TestRMAAccessChecked(t *testing.T) {
	cleanEnv(t)
	p := connectPair(t)
	defer p.close(t)
	target := make([]byte, 4096)
	mr, err := fi.RegisterMR(p.server.domain, &fi.MRAttr{Buf: target[1024:2048], Access: fi.AccessRemoteWrite, RequestedKey: 0x1234}, 0)
	require.NoError(t, err)
	defer mr.Close()
	rma := p.client.ep.(ep.RMA)

	require.NoError(t, rma.Write([]byte("granted"), nil, fi.AddrUnspec, 100, 0x1234, "w1"))
	c := poll(t, p.client.cq)
	require.Equal(t, "w1", c.Context)
	require.Equal(t, fi.FlagRMA|fi.FlagWrite, c.Flags)
	// The target's background progress placed the data; a read of the
	// target's CQ takes the endpoint's lock, which orders that for the
	// race detector (across processes the network does).
	_, _ = p.server.cq.Read(make([]eq.Completion, 1))
	require.Equal(t, []byte("granted"), target[1124:1131])

	// Reading needs FI_REMOTE_READ, which the region lacks.
	require.NoError(t, rma.Read(make([]byte, 8), nil, fi.AddrUnspec, 0, 0x1234, "r1"))
	var comp [1]eq.Completion
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := p.client.cq.Read(comp[:])
		if err == fi.EAVAIL || time.Now().After(deadline) {
			break
		}
	}
	ce, err := p.client.cq.ReadErr()
	require.NoError(t, err)
	require.Equal(t, "r1", ce.Context)
	require.Equal(t, fi.FlagRMA|fi.FlagRead, ce.Flags)
	require.Equal(t, fi.ECANCELED, ce.Err)
	require.IsType(t, &eq.Shutdown{}, waitEvent(t, p.client.eq))
	require.IsType(t, &eq.Shutdown{}, waitEvent(t, p.server.eq))
	_, _ = p.server.cq.Read(make([]eq.Completion, 1))
	require.Equal(t, make([]byte, 1024), target[:1024])
	require.Equal(t, make([]byte, 2048), target[2048:])
}
