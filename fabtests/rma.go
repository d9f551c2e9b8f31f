package fabtests

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// rdmTargetPad is the margin around the RMA sizes in the target buffer:
// operations land at offset rdmTargetPad, and the bytes on either side
// must stay as they were.
const rdmTargetPad = 4096

// rdmTarget is an initiator and a target RDM endpoint; the target exposes
// buf, which holds pattern(len(buf), 0x5a), under key. x.at turns offsets
// into buf into RMA addresses.
type rdmTarget struct {
	*mesh
	init, target *rdmPeer
	rma          ep.RMA // the initiator's
	dest         fi.Addr
	buf          []byte
	key          uint64
	base         uint64 // what addresses buf[0] (rmaBase)
}

// at is the RMA address of offset off in the target buffer.
func (x *rdmTarget) at(off uint64) uint64 { return x.base + off }

// rmaBase is the RMA address of buf[0] at a target whose domain has info's
// MR mode: its virtual address under FI_MR_VIRT_ADDR, 0 otherwise (the
// address is then an offset into the region; fi_mr(3)).
func rmaBase(info *fi.Info, buf []byte) uint64 {
	if info.DomainAttr.MRMode&(fi.MRModeVirtAddr|fi.MRModeBasic) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
}

// rmaSkips skips when info's domain needs what the suite's RMA tests do
// not do: MRs bound to endpoints.
func rmaSkips(t testing.TB, info *fi.Info) {
	t.Helper()
	if info.DomainAttr.MRMode&fi.MRModeEndpoint != 0 {
		t.Skip("FI_MR_ENDPOINT: fi.MR has no way to bind a region to an endpoint")
	}
}

// rmaOf returns x's RMA ability, skipping when the endpoint lacks it.
func rmaOf(t testing.TB, x *rdmPeer) ep.RMA {
	t.Helper()
	r, ok := x.ep.(ep.RMA)
	if !ok {
		t.Skipf("provider's endpoint %T has no RMA ability (ep.RMA)", x.ep)
	}
	return r
}

// expose registers buf at x for remote access and returns its key.
func expose(t testing.TB, x *rdmPeer, buf []byte, access fi.Access) uint64 {
	t.Helper()
	mr, err := fi.RegisterMR(x.domain, &fi.MRAttr{Buf: buf, Access: access, RequestedKey: 0x5eed}, 0)
	skipIfAbsent(t, err, "memory registration")
	keep(t, mr)
	return mr.Key()
}

// rdmRMAPair opens an initiator and a target with caps (FI_RMA added) and
// registers a target buffer of size plus two pads with access.
func (s *suite) rdmRMAPair(t testing.TB, caps fi.Caps, access fi.Access, size int) *rdmTarget {
	t.Helper()
	m := s.rdm(t, rdmOpts{caps: caps | fi.CapRMA}, "initiator", "target")
	rmaSkips(t, m.peers[0].info)
	m.connect(t)
	x := &rdmTarget{mesh: m, init: m.peers[0], target: m.peers[1], dest: m.addr[0][1]}
	x.rma = rmaOf(t, x.init)
	x.buf = pattern(size+2*rdmTargetPad, 0x5a)
	x.key = expose(t, x.target, x.buf, access)
	x.base = rmaBase(x.target.info, x.buf)
	return x
}

// write writes data at off with FI_DELIVERY_COMPLETE, so that it is in
// place once the write completes, and checks the completion.
func (x *rdmTarget) write(t testing.TB, data []byte, off uint64, name string) {
	t.Helper()
	ctx := &opCtx{name}
	m := &ep.RMAMessage{IOV: [][]byte{data}, Desc: []any{x.init.desc(t, data)}, Addr: x.dest,
		RMAIOV: []ep.RMAIOV{{Addr: x.at(off), Len: len(data), Key: x.key}}, Context: ctx}
	// The target may place the data on a progress goroutine of its own,
	// ordered with the test's reads of the buffer only through the
	// network, which the race detector cannot see: polling the target
	// (its progress lock) before the write and after its completion
	// orders them for it.
	if x.target != nil {
		x.target.poll(t)
	}
	x.post(t, name, func() error { return x.rma.WriteMsg(m, fi.FlagDeliveryComplete) })
	c := x.completion(t, x.init)
	require.Same(t, ctx, c.c.Context)
	require.Equal(t, writeFlags, c.c.Flags, "write completion's flags: %v", c.c.Flags)
	if x.target != nil {
		x.target.poll(t)
	}
}

// read reads n bytes at off and checks the completion.
func (x *rdmTarget) read(t testing.TB, n int, off uint64, name string) []byte {
	t.Helper()
	lbuf, ctx := make([]byte, n), &opCtx{name}
	ldesc := x.init.desc(t, lbuf)
	x.post(t, name, func() error { return x.rma.Read(lbuf, ldesc, x.dest, x.at(off), x.key, ctx) })
	c := x.completion(t, x.init)
	require.Same(t, ctx, c.c.Context)
	require.Equal(t, readFlags, c.c.Flags, "read completion's flags: %v", c.c.Flags)
	return lbuf
}

// rmaSizes are the RMA sizes of the group, 8 B to 1 MiB.
var rmaSizes = []int{8, 64, 4 << 10, 64 << 10, 1 << 20}

// testRDMRMA is the rma/rdm group: RMA over RDM endpoints (fi_rma(3)).
func testRDMRMA(t *testing.T, s *suite) {
	s.run(t, "write", func(t *testing.T) {
		x := s.rdmRMAPair(t, 0, remoteRW, 1<<20)
		for i, n := range rmaSizes {
			t.Run(sizeName(n), func(t *testing.T) {
				if mx := x.init.info.EPAttr.MaxMsgSize; n > mx {
					t.Skipf("provider's max message size is %d", mx)
				}
				before := bytes.Clone(x.buf)
				data := pattern(n, byte(i+1))
				x.write(t, data, rdmTargetPad, "write")
				require.True(t, bytes.Equal(data, x.buf[rdmTargetPad:rdmTargetPad+n]), "written range")
				require.Equal(t, before[:rdmTargetPad], x.buf[:rdmTargetPad], "bytes before the range")
				require.True(t, bytes.Equal(before[rdmTargetPad+n:], x.buf[rdmTargetPad+n:]), "bytes after the range")
			})
		}
		x.target.requireCQEmpty(t) // a write without CQ data completes only at the initiator
	})

	s.run(t, "read", func(t *testing.T) {
		x := s.rdmRMAPair(t, 0, remoteRW, 1<<20)
		for _, n := range rmaSizes {
			t.Run(sizeName(n), func(t *testing.T) {
				if mx := x.init.info.EPAttr.MaxMsgSize; n > mx {
					t.Skipf("provider's max message size is %d", mx)
				}
				got := x.read(t, n, rdmTargetPad+1, "read")
				require.True(t, bytes.Equal(x.buf[rdmTargetPad+1:rdmTargetPad+1+n], got), "read range")
			})
		}
		x.target.requireCQEmpty(t)
	})

	s.run(t, "writedata", func(t *testing.T) {
		x := s.rdmRMAPair(t, fi.CapMsg, remoteRW, 4096)
		v := cqData(t, x.init.peer, 0xc0ffee)
		if x.target.info.Mode&fi.ModeRxCQData != 0 {
			buf := make([]byte, 8)
			require.NoError(t, x.target.msg(t).Recv(buf, x.target.desc(t, buf), fi.AddrUnspec, nil))
		}
		data, ctx := pattern(32, 3), &opCtx{"writedata"}
		desc := x.init.desc(t, data)
		x.post(t, "writedata", func() error { return x.rma.WriteData(data, desc, v, x.dest, x.at(64), x.key, ctx) })
		rc := x.completion(t, x.target)
		require.Equal(t, fi.FlagRMA|fi.FlagRemoteWrite|fi.FlagRemoteCQData, rc.c.Flags, "target completion's flags: %v", rc.c.Flags)
		require.Equal(t, v, rc.c.Data, "remote CQ data")
		require.Equal(t, data, x.buf[64:96], "written range when the target completion arrives")
		c := x.completion(t, x.init)
		require.Same(t, ctx, c.c.Context)
		require.Equal(t, writeFlags, c.c.Flags)
	})

	for _, tc := range []struct {
		name   string
		access fi.Access
		read   bool
		addr   uint64
		badKey bool
	}{
		{"bad-key", remoteRW, false, 0, true},
		{"write-out-of-range", remoteRW, false, targetBytes - 10, false},
		{"read-out-of-range", remoteRW, true, targetBytes - 10, false},
		{"write-no-access", fi.AccessRemoteRead, false, 0, false},
		{"read-no-access", fi.AccessRemoteWrite, true, 0, false},
	} {
		s.run(t, tc.name, func(t *testing.T) {
			// A refused RMA completes as an error entry at the initiator
			// and leaves the target's memory as it was; the endpoints
			// carry on.
			x := s.rdmRMAPair(t, 0, tc.access, targetBytes-2*rdmTargetPad)
			require.Len(t, x.buf, targetBytes)
			before := bytes.Clone(x.buf)
			key := x.key
			if tc.badKey {
				key++
			}
			lbuf, ctx := pattern(100, 4), &opCtx{tc.name}
			ldesc := x.init.desc(t, lbuf)
			x.post(t, tc.name, func() error {
				if tc.read {
					return x.rma.Read(lbuf, ldesc, x.dest, x.at(tc.addr), key, ctx)
				}
				return x.rma.Write(lbuf, ldesc, x.dest, x.at(tc.addr), key, ctx)
			})
			e := x.cqError(t, x.init)
			require.Same(t, ctx, e.Context)
			x.poll(t) // whatever the target reports, it is read
			require.Equal(t, before, x.buf, "target memory after a refused RMA")
			if tc.access&fi.AccessRemoteWrite != 0 {
				data := pattern(8, 9)
				x.write(t, data, 8, "valid write")
				require.Equal(t, data, x.buf[8:16], "a valid write after the refused one")
			} else {
				require.Equal(t, x.buf[8:16], x.read(t, 8, 8, "valid read"), "a valid read after the refused one")
			}
		})
	}

	s.run2(t, "write-read", func(t *testing.T) {
		x := s.rdmRMAPair(t, 0, remoteRW, 64<<10)
		data := pattern(64<<10, 0x21)
		x.write(t, data, rdmTargetPad, "write")
		require.True(t, bytes.Equal(data, x.read(t, len(data), rdmTargetPad, "read back")), "read back what was written")
		require.True(t, bytes.Equal(data, x.buf[rdmTargetPad:rdmTargetPad+len(data)]), "target memory")
	}, func(t *testing.T) {
		m := s.rdm(t, rdmOpts{caps: fi.CapRMA}, "initiator")
		x := &rdmTarget{mesh: m, init: m.peers[0]}
		rmaSkips(t, x.init.info)
		x.rma = rmaOf(t, x.init)
		l := s.spawn(t, m.poll)
		x.dest = exchangeNames(t, l, x.init)
		x.key = l.recvU64(t, "key")
		x.base = l.recvU64(t, "base")
		size := min(256<<10, x.init.info.EPAttr.MaxMsgSize)
		want := pattern(size+2*rdmTargetPad, 0x5a)
		require.Equal(t, want[:100], x.read(t, 100, 0, "read untouched"), "the target's initial bytes")
		data := pattern(size, 0x21)
		x.write(t, data, rdmTargetPad, "write")
		require.True(t, bytes.Equal(data, x.read(t, size, rdmTargetPad, "read back")), "read back what was written")
		l.send(t, "written", nil)
		l.finish(t)
	}, func(t *testing.T, l *link) {
		m := s.rdm(t, rdmOpts{caps: fi.CapRMA}, "target")
		x := m.peers[0]
		l.poll = m.poll
		rmaSkips(t, x.info)
		exchangeNames(t, l, x)
		size := min(256<<10, x.info.EPAttr.MaxMsgSize)
		buf := pattern(size+2*rdmTargetPad, 0x5a)
		want := bytes.Clone(buf)
		copy(want[rdmTargetPad:], pattern(size, 0x21))
		l.sendU64(t, "key", expose(t, x, buf, remoteRW))
		l.sendU64(t, "base", rmaBase(x.info, buf))
		l.recv(t, "written")
		require.True(t, bytes.Equal(want, buf), "target memory after the parent's write")
	})
}
