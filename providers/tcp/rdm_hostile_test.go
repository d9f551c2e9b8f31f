//go:build linux

package tcp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Hostile peers of an RDM endpoint (tcp;ofi_rxm). A raw TCP socket does
// the tcp CM exchange with a valid rxm connect record (docs/wire-tcp.md, §2.3,
// §3.2) and then sends bytes that break the rxm or tcp data protocol
// (§2.4, §3.3-§3.5). What a user relies on: the endpoint drops that one
// connection, nothing panics, no memory it did not grant is read or
// written, its posted receives are left alone, and it keeps serving
// well-behaved peers.

// hrDeadline bounds every wait of these tests.
const hrDeadline = 10 * time.Second

// hrRDM is an RDM endpoint with the domain it was opened in, so that tests
// can register memory on it.
type hrRDM struct {
	e    ep.Endpoint
	cq   eq.CompletionQueue
	av   fi.AV
	dom  fi.Domain
	mrs  []fi.MR
	once sync.Once
	fab  fi.Fabric
}

// openHostileRDM opens an RDM endpoint on 127.0.0.1 (FI_SOURCE,
// FI_DIRECTED_RECV) with one tagged-format CQ for both directions. close
// closes it; the test's cleanup does too, for a test that failed early.
func openHostileRDM(t *testing.T) *hrRDM { t.Helper(); return openHostileRDMWith(t, 0) }

// openHostileRDMWith is openHostileRDM with more caps asked.
func openHostileRDMWith(t *testing.T, caps fi.Caps) *hrRDM {
	t.Helper()
	hints := &fi.Info{EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}, Caps: fi.CapMsg | fi.CapTagged | fi.CapSource | fi.CapDirectedRecv | caps,
		FabricAttr: &fi.FabricAttr{ProvName: "tcp"}}
	infos, err := fi.GetInfo(context.Background(), "127.0.0.1", "0", fi.FlagSource, hints)
	require.NoError(t, err)
	info := infos[0]
	require.Equal(t, fi.EPTypeRDM, info.EPAttr.Type)
	s := &hrRDM{}
	s.fab, err = fi.OpenFabric(info)
	require.NoError(t, err)
	s.dom, err = s.fab.OpenDomain(info)
	require.NoError(t, err)
	s.cq, err = eq.OpenCQ(s.dom, &eq.CQAttr{Format: eq.FormatTagged})
	require.NoError(t, err)
	s.av, err = fi.OpenAV(s.dom, &fi.AVAttr{})
	require.NoError(t, err)
	s.e, err = ep.Open(s.dom, info)
	require.NoError(t, err)
	require.NoError(t, s.e.Bind(s.cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(t, s.e.Bind(s.av, 0))
	require.NoError(t, s.e.Enable())
	t.Cleanup(s.close)
	return s
}

// close closes the endpoint and everything it was opened with, once.
func (s *hrRDM) close() {
	s.once.Do(func() {
		_ = s.e.Close()
		for _, m := range s.mrs {
			_ = m.Close()
		}
		_ = s.av.Close()
		_ = s.cq.Close()
		_ = s.dom.Close()
		_ = s.fab.Close()
	})
}

func (s *hrRDM) msg() ep.Msg       { return s.e.(ep.Msg) }
func (s *hrRDM) tagged() ep.Tagged { return s.e.(ep.Tagged) }

// name returns the endpoint's address, a sockaddr.
func (s *hrRDM) name(t *testing.T) []byte {
	b := make([]byte, 64)
	n, err := s.e.(ep.Namer).Name(b)
	require.NoError(t, err)
	return b[:n]
}

// register registers buf on the endpoint's domain under key with access.
func (s *hrRDM) register(t *testing.T, buf []byte, access fi.Access, key uint64) {
	t.Helper()
	mr, err := fi.RegisterMR(s.dom, &fi.MRAttr{Buf: buf, Access: access, RequestedKey: key}, 0)
	require.NoError(t, err)
	require.Equal(t, key, mr.Key())
	s.mrs = append(s.mrs, mr)
}

// --- wire builders (little-endian, as the Go side and C on x86 speak) ---

// hrConnectRecord returns a valid 24-byte rxm connect record (§3.2):
// version 1, little-endian, ctrl 4, op 3, port, flow_ctrl 2, eager limit
// 16384, rx_size 4096, conn_id pid<<32 | 0.
func hrConnectRecord(port uint16) []byte {
	b := []byte{1, 2, 4, 3, 0, 0, 2, 0}
	binary.LittleEndian.PutUint16(b[4:], port)
	b = binary.LittleEndian.AppendUint32(b, 16384)
	b = binary.LittleEndian.AppendUint32(b, 4096)
	return binary.LittleEndian.AppendUint64(b, uint64(os.Getpid())<<32)
}

// hrTCP returns a tcp data header (§2.4): version 3, op, flags, op_data,
// rma_iov_cnt, hdr_size, size, then the extension words.
func hrTCP(op byte, flags uint16, opData, rmaCnt, hdrSize byte, size uint64, ext ...uint64) []byte {
	b := []byte{3, op, 0, 0, opData, rmaCnt, hdrSize, 0}
	binary.LittleEndian.PutUint16(b[2:], flags)
	b = binary.LittleEndian.AppendUint64(b, size)
	for _, v := range ext {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// hrPkt is a 64-byte rxm packet header (§3.3) to encode.
type hrPkt struct {
	ver      byte // 4 unless a test breaks it
	typ      byte
	segSize  uint16
	segNo    uint32
	connID   uint64
	msgID    uint64
	ctrlData uint64
	op       byte
	flags    uint32
	size     uint64
	data     uint64
	tag      uint64
}

func (p hrPkt) bytes() []byte {
	b := make([]byte, 64)
	b[0], b[1] = p.ver, p.typ
	binary.LittleEndian.PutUint16(b[2:], p.segSize)
	binary.LittleEndian.PutUint32(b[4:], p.segNo)
	binary.LittleEndian.PutUint64(b[8:], p.connID)
	binary.LittleEndian.PutUint64(b[16:], p.msgID)
	binary.LittleEndian.PutUint64(b[24:], p.ctrlData)
	b[32], b[34] = 2, p.op
	binary.LittleEndian.PutUint32(b[36:], p.flags)
	binary.LittleEndian.PutUint64(b[40:], p.size)
	binary.LittleEndian.PutUint64(b[48:], p.data)
	binary.LittleEndian.PutUint64(b[56:], p.tag)
	return b
}

// hrMsg frames payload (an rxm header and what follows it) as an
// untagged tcp message: op 0, hdr 16.
func hrMsg(payload ...[]byte) []byte {
	body := bytes.Join(payload, nil)
	return append(hrTCP(0, 0, 0, 0, 16, uint64(16+len(body))), body...)
}

// hrEager is a valid eager message (§3.4): rxm header type 0, op 0,
// size len(data), then data.
func hrEager(connID uint64, data []byte) []byte {
	return hrMsg(hrPkt{ver: 4, connID: connID, size: uint64(len(data))}.bytes(), data)
}

// hrRawTagged is a valid raw tagged message (§3.4): tcp op 0, flag 0x80,
// hdr 24 with the tag, no rxm header.
func hrRawTagged(tag uint64, data []byte) []byte {
	return append(hrTCP(0, 0x80, 0, 0, 24, uint64(24+len(data)), tag), data...)
}

// hrRndvDesc is a 104-byte rendezvous descriptor (§3.5): up to four
// {addr, len, key} iovs and the count byte.
func hrRndvDesc(count byte, iovs ...[3]uint64) []byte {
	b := make([]byte, 104)
	for i, v := range iovs {
		binary.LittleEndian.PutUint64(b[i*24:], v[0])
		binary.LittleEndian.PutUint64(b[i*24+8:], v[1])
		binary.LittleEndian.PutUint64(b[i*24+16:], v[2])
	}
	b[96] = count
	return b
}

// hrRndvReq is a rendezvous request: rxm type 2 with msgID, op and tag, for
// a message of size bytes, then desc.
func hrRndvReq(connID, msgID uint64, op byte, tag, size uint64, desc []byte) []byte {
	return hrMsg(hrPkt{ver: 4, typ: 2, connID: connID, msgID: msgID, op: op, tag: tag, size: size}.bytes(), desc)
}

// hrReadReq is a tcp RMA read request (§2.5.4) of one iov.
func hrReadReq(addr, n, key uint64) []byte {
	return hrTCP(2, 0, 0, 1, 40, 40, addr, n, key)
}

// hrWrite is a tcp RMA write (§2.5.3) of data to one iov.
func hrWrite(addr, key uint64, data []byte) []byte {
	return append(hrTCP(4, 0, 0, 1, 40, uint64(40+len(data)), addr, uint64(len(data)), key), data...)
}

// --- the raw peer ---

// hrRaw is a raw TCP socket that did the CM exchange with an RDM
// endpoint as an rxm peer.
type hrRaw struct {
	c net.Conn
	// connID is the endpoint's index for us, from its accept record: the
	// conn_id of every rxm header we send.
	connID uint64
}

// hrDial connects a raw socket to v and sends a CM connect request with
// private data rec; nil rec means a valid connect record announcing the
// socket's own port as our listening port.
func hrDial(t *testing.T, v *hrRDM, rec []byte) net.Conn {
	t.Helper()
	ap, _, err := fi.AddrPortFromSockaddr(v.name(t))
	require.NoError(t, err)
	c, err := net.Dial("tcp", ap.String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	if rec == nil {
		rec = hrConnectRecord(c.LocalAddr().(*net.TCPAddr).AddrPort().Port())
	}
	_, err = c.Write(cmRequest(rec))
	require.NoError(t, err)
	return c
}

// hrConnect connects a raw rxm peer to v: the accept must be a tcp CM
// accept (type 1, conn_data 1) with a 16-byte accept record (§3.2).
func hrConnect(t *testing.T, v *hrRDM) *hrRaw {
	t.Helper()
	c := hrDial(t, v, nil)
	resp := make([]byte, 32+16)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(hrDeadline)))
	_, err := readFull(c, resp)
	require.NoError(t, err, "the accept")
	require.Equal(t, []byte{3, 1, 0, 16}, resp[:4], "tcp CM accept, 16 bytes of data")
	require.Equal(t, uint64(1), binary.LittleEndian.Uint64(resp[24:32]), "conn_data")
	id := binary.LittleEndian.Uint64(resp[32:])
	require.Equal(t, uint32(os.Getpid()), uint32(id>>32), "server_conn_id's pid")
	require.Equal(t, uint32(4096), binary.LittleEndian.Uint32(resp[40:]), "rx_size")
	require.Equal(t, byte(2), resp[44], "flow_ctrl")
	return &hrRaw{c: c, connID: id & 0xffffffff}
}

// waitEstablished waits until v sends to us over our connection and
// checks that eager message (conn_id is our index from the connect record,
// 0).
func (r *hrRaw) waitEstablished(t *testing.T, v *hrRDM) {
	t.Helper()
	ap := r.c.LocalAddr().(*net.TCPAddr).AddrPort()
	_, name, err := fi.SockaddrFromAddrPort(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	require.NoError(t, err)
	dest, err := v.av.Insert([][]byte{name}, 0)
	require.NoError(t, err)
	deadline := time.Now().Add(hrDeadline)
	for {
		err := v.msg().Send([]byte("ping"), nil, dest[0], "established")
		if err == nil {
			break
		}
		if !errors.Is(err, fi.EAGAIN) {
			require.NoError(t, err, "a send over an accepted connection gets fi.EAGAIN until it is up, never a connection of its own")
		}
		require.True(t, time.Now().Before(deadline), "the endpoint never sent over the accepted connection: %v", err)
		_, _ = v.cq.Read(nil)
	}
	got := r.recv(t, v, 16+64+4)
	require.Equal(t, hrTCP(0, 0, 0, got[5], 16, 84), got[:16], "eager tcp header")
	require.Equal(t, hrPkt{ver: 4, size: 4}.bytes(), got[16:80], "eager rxm header, conn_id 0")
	require.Equal(t, []byte("ping"), got[80:])
	require.Equal(t, "established", hrWaitComp(t, v.cq).Context)
}

func (r *hrRaw) send(t *testing.T, b ...[]byte) {
	t.Helper()
	_, err := r.c.Write(bytes.Join(b, nil))
	require.NoError(t, err)
}

// recv reads exactly n bytes the endpoint sends us.
func (r *hrRaw) recv(t *testing.T, v *hrRDM, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	got := 0
	deadline := time.Now().Add(hrDeadline)
	for got < n {
		require.True(t, time.Now().Before(deadline), "got %d of %d bytes: %x", got, n, b[:got])
		_, _ = v.cq.Read(nil) // progress
		require.NoError(t, r.c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
		k, err := r.c.Read(b[got:])
		got += k
		if err != nil && !hrIsTimeout(err) {
			t.Fatalf("reading %d bytes (got %x): %v", n, b[:got], err)
		}
	}
	return b
}

func hrIsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// hrRequireDropped waits until v ends the connection of c (EOF or reset),
// reading the CQ meanwhile because progress runs from CQ reads; it
// returns what v sent before. Timing out fails the test: a silent peer is
// not a dropped one.
func hrRequireDropped(t *testing.T, v *hrRDM, c net.Conn) []byte {
	t.Helper()
	var got []byte
	buf := make([]byte, 4096)
	deadline := time.Now().Add(hrDeadline)
	for {
		require.True(t, time.Now().Before(deadline), "the endpoint did not close the hostile connection (it sent %x)", got)
		_, _ = v.cq.Read(nil)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		switch {
		case err == nil || hrIsTimeout(err):
			continue
		case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
			return got
		default:
			t.Fatalf("reading the hostile connection: %v", err)
		}
	}
}

// hrRequireOpen checks that v keeps the connection of c open and sends
// nothing on it for a moment.
func hrRequireOpen(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	n, err := c.Read(make([]byte, 1))
	require.Zero(t, n)
	require.True(t, hrIsTimeout(err), "the connection ended: %v", err)
}

// --- completions ---

// hrWaitComp returns the next completion of q, polling the other queues for
// progress; an error entry fails the test.
func hrWaitComp(t *testing.T, q eq.CompletionQueue, others ...eq.CompletionQueue) eq.Completion {
	t.Helper()
	var c [1]eq.Completion
	deadline := time.Now().Add(hrDeadline)
	for {
		require.True(t, time.Now().Before(deadline), "no completion")
		n, err := q.Read(c[:])
		if n == 1 {
			return c[0]
		}
		if err == fi.EAVAIL {
			ce, _ := q.ReadErr()
			t.Fatalf("error completion %+v", ce)
		}
		require.ErrorIs(t, err, fi.EAGAIN)
		for _, o := range others {
			_, _ = o.Read(nil)
		}
	}
}

// hrWaitErr returns the next error entry of q.
func hrWaitErr(t *testing.T, q eq.CompletionQueue) *eq.CQError {
	t.Helper()
	var c [1]eq.Completion
	deadline := time.Now().Add(hrDeadline)
	for {
		require.True(t, time.Now().Before(deadline), "no error completion")
		n, err := q.Read(c[:])
		require.Zero(t, n, "a completion instead of an error: %+v", c[0])
		if err == fi.EAVAIL {
			ce, err := q.ReadErr()
			require.NoError(t, err)
			return ce
		}
		require.ErrorIs(t, err, fi.EAGAIN)
	}
}

// hrNoComp checks that q holds nothing.
func hrNoComp(t *testing.T, q eq.CompletionQueue) {
	t.Helper()
	var c [1]eq.Completion
	n, err := q.Read(c[:])
	require.Zero(t, n, "unexpected completion %+v", c[0])
	require.ErrorIs(t, err, fi.EAGAIN, "unexpected error completion")
}

// hrSurvivor is a receive posted on the victim before the hostile bytes:
// the hostile peer must not consume or fail it, and a well-behaved peer's
// message must land in it afterwards. Its buffer sits inside a guarded
// array so that writes past it show.
type hrSurvivor struct {
	mem []byte
	buf []byte
}

const hrSurvivorCtx = "survivor"

func hrPostSurvivor(t *testing.T, v *hrRDM) *hrSurvivor {
	t.Helper()
	s := &hrSurvivor{mem: bytes.Repeat([]byte{0xa5}, 96)}
	s.buf = s.mem[16:80:80]
	require.NoError(t, v.msg().Recv(s.buf, nil, fi.AddrUnspec, hrSurvivorCtx))
	return s
}

// hrRequireServes checks that v still works with a well-behaved RDM peer:
// a fresh endpoint sends to v (the message lands in the hrSurvivor receive
// when there is one, else in a receive posted here) and v answers it.
func hrRequireServes(t *testing.T, v *hrRDM, s *hrSurvivor) {
	t.Helper()
	g := openHostileRDM(t)
	defer g.close()
	toV, err := g.av.Insert([][]byte{v.name(t)}, 0)
	require.NoError(t, err)
	toG, err := v.av.Insert([][]byte{g.name(t)}, 0)
	require.NoError(t, err)

	if s == nil {
		s = hrPostSurvivor(t, v)
	}
	msg := []byte("still serving well-behaved peers")
	hrSendRetry(t, g, toV[0], msg, "g-send", v)
	c := hrWaitComp(t, g.cq, v.cq)
	require.Equal(t, "g-send", c.Context)
	c = hrWaitComp(t, v.cq, g.cq)
	require.Equal(t, hrSurvivorCtx, c.Context)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg, c.Flags)
	require.Equal(t, len(msg), c.Len)
	want := bytes.Repeat([]byte{0xa5}, 96)
	copy(want[16:], msg)
	require.Equal(t, want, s.mem, "the hrSurvivor receive got the message and nothing else was written")

	rbuf := make([]byte, 16)
	require.NoError(t, g.msg().Recv(rbuf, nil, toV[0], "g-recv"))
	hrSendRetry(t, v, toG[0], []byte("answer"), "v-send", g)
	c = hrWaitComp(t, v.cq, g.cq)
	require.Equal(t, "v-send", c.Context)
	c = hrWaitComp(t, g.cq, v.cq)
	require.Equal(t, "g-recv", c.Context)
	require.Equal(t, []byte("answer"), rbuf[:c.Len])
	hrNoComp(t, v.cq)
}

// hrSendRetry sends buf from s to dest, retrying fi.EAGAIN while the
// connection opens.
func hrSendRetry(t *testing.T, s *hrRDM, dest fi.Addr, buf []byte, ctx any, peer *hrRDM) {
	t.Helper()
	deadline := time.Now().Add(hrDeadline)
	for {
		err := s.msg().Send(buf, nil, dest, ctx)
		if err != fi.EAGAIN {
			require.NoError(t, err)
			return
		}
		require.True(t, time.Now().Before(deadline), "send kept returning EAGAIN")
		_, _ = s.cq.Read(nil)
		_, _ = peer.cq.Read(nil)
	}
}

// --- the tests ---

// TestHostileRDMRawPeerSpeaksRxm is the positive control of the hostile
// tests: the raw client they use, speaking the protocol right, gets its
// eager and raw tagged messages received, its tcp RMA read and write of
// granted memory served, and its rendezvous message read, and keeps its
// connection. So the drops in the other tests are due to their bytes.
func TestHostileRDMRawPeerSpeaksRxm(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	v := openHostileRDM(t)
	defer v.close()
	mem := []byte("0123456789abcdefghijklmnopqrstuv")
	v.register(t, mem, fi.AccessRemoteRead|fi.AccessRemoteWrite, 0x5151)
	r := hrConnect(t, v)
	defer r.c.Close()
	r.waitEstablished(t, v)

	// Eager, untagged.
	buf := make([]byte, 32)
	require.NoError(t, v.msg().Recv(buf, nil, fi.AddrUnspec, "recv"))
	r.send(t, hrEager(r.connID, []byte("hello")))
	c := hrWaitComp(t, v.cq)
	require.Equal(t, "recv", c.Context)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg, c.Flags)
	require.Equal(t, 5, c.Len)
	require.Equal(t, append([]byte("hello"), make([]byte, 27)...), buf)

	// Raw tagged.
	tbuf := make([]byte, 32)
	require.NoError(t, v.tagged().TRecv(tbuf, nil, fi.AddrUnspec, 0x4d2, 0, "trecv"))
	r.send(t, hrRawTagged(0x4d2, []byte("tagged!")))
	c = hrWaitComp(t, v.cq)
	require.Equal(t, "trecv", c.Context)
	require.Equal(t, fi.FlagRecv|fi.FlagTagged, c.Flags)
	require.Equal(t, uint64(0x4d2), c.Tag)
	require.Equal(t, []byte("tagged!"), tbuf[:c.Len])

	// tcp RMA read of granted memory: the response carries those bytes.
	r.send(t, hrReadReq(4, 8, 0x5151))
	rsp := r.recv(t, v, 16+8)
	require.Equal(t, byte(3), rsp[0])
	require.Equal(t, byte(3), rsp[1], "read response")
	require.Equal(t, byte(16), rsp[6])
	require.Equal(t, uint64(24), binary.LittleEndian.Uint64(rsp[8:]))
	require.Equal(t, []byte("456789ab"), rsp[16:])

	// tcp RMA write to granted memory, then an eager message whose receive
	// completion orders it.
	r.send(t, hrWrite(10, 0x5151, []byte("WRITE")), hrEager(r.connID, []byte("sync")))
	require.NoError(t, v.msg().Recv(buf, nil, fi.AddrUnspec, "sync"))
	c = hrWaitComp(t, v.cq)
	require.Equal(t, "sync", c.Context)
	require.Equal(t, []byte("0123456789WRITEfghijklmnopqrstuv"), mem)

	// Rendezvous: the victim reads our 16 bytes and answers read-done.
	rbuf := make([]byte, 16)
	require.NoError(t, v.msg().Recv(rbuf, nil, fi.AddrUnspec, "rndv"))
	r.send(t, hrRndvReq(r.connID, 0x10007, 0, 0, 16, hrRndvDesc(1, [3]uint64{0, 16, 0x77})))
	req := r.recv(t, v, 40)
	require.Equal(t, hrTCP(2, 0, 0, 1, 40, 40, 0, 16, 0x77), req, "the victim's read request")
	r.send(t, append(hrTCP(3, 0, 0, 1, 16, 32), []byte("rendezvous data!")...))
	done := r.recv(t, v, 80)
	require.Equal(t, hrTCP(0, 0, 0, done[5], 16, 80), done[:16], "read-done's tcp header")
	require.Equal(t, byte(4), done[16], "rxm control version")
	require.Equal(t, byte(3), done[17], "read-done")
	require.Equal(t, uint64(0), binary.LittleEndian.Uint64(done[24:]), "conn_id: our index from the connect record")
	require.Equal(t, uint64(0x10007), binary.LittleEndian.Uint64(done[32:]), "msg_id echoed")
	c = hrWaitComp(t, v.cq)
	require.Equal(t, "rndv", c.Context)
	require.Equal(t, 16, c.Len)
	require.Equal(t, []byte("rendezvous data!"), rbuf)

	hrRequireOpen(t, r.c)
	hrNoComp(t, v.cq)
	hrRequireServes(t, v, nil)
}

// hrCase is hostile bytes built for the conn_id the victim gave us.
type hrCase struct {
	name string
	wire func(connID uint64) []byte
}

// hrRunHostile runs each case against a fresh victim: the connection drops
// with nothing sent to the peer, no completion appears, the hrSurvivor
// receive is untouched, and a well-behaved peer is served afterwards.
func hrRunHostile(t *testing.T, cases []hrCase) {
	t.Helper()
	cleanEnv(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			v := openHostileRDM(t)
			defer v.close()
			s := hrPostSurvivor(t, v)
			r := hrConnect(t, v)
			defer r.c.Close()
			r.send(t, tc.wire(r.connID))
			require.Empty(t, hrRequireDropped(t, v, r.c), "the endpoint answered the hostile bytes")
			hrNoComp(t, v.cq)
			require.Equal(t, bytes.Repeat([]byte{0xa5}, 96), s.mem, "the hrSurvivor receive was written")
			hrRequireServes(t, v, s)
		})
	}
}

func hrEagerWith(p hrPkt, data []byte) func(uint64) []byte {
	return func(id uint64) []byte {
		if p.connID == 0 {
			p.connID = id
		}
		return hrMsg(p.bytes(), data)
	}
}

// TestHostileRDMBadHeaders: rxm packets whose header breaks the protocol
// (a conn_id the endpoint did not give the peer, a control version other
// than 4, an eager size that disagrees with the tcp length, a tcp payload
// too short for the 64-byte header, an unknown or unspoken type, a bad
// op or flags, a message above the eager limit) cost the peer its
// connection and nothing else.
func TestHostileRDMBadHeaders(t *testing.T) {
	hello := []byte("hello")
	big := bytes.Repeat([]byte{'x'}, 16385)
	hrRunHostile(t, []hrCase{
		// 1. conn_id is not the index from the accept record.
		{"conn_id index+1", func(id uint64) []byte { return hrEager(id+1, hello) }},
		{"conn_id all ones", func(id uint64) []byte { return hrEager(^uint64(0), hello) }},
		{"conn_id index+1000", func(id uint64) []byte { return hrEager(id+1000, hello) }},
		// 2. control version.
		{"ctrl version 3", hrEagerWith(hrPkt{ver: 3, size: 5}, hello)},
		{"ctrl version 5", hrEagerWith(hrPkt{ver: 5, size: 5}, hello)},
		{"ctrl version 0", hrEagerWith(hrPkt{ver: 0, size: 5}, hello)},
		// 3. eager size vs the tcp payload length.
		{"eager size short", hrEagerWith(hrPkt{ver: 4, size: 4}, hello)},
		{"eager size long", hrEagerWith(hrPkt{ver: 4, size: 6}, hello)},
		{"eager size 0", hrEagerWith(hrPkt{ver: 4, size: 0}, hello)},
		{"eager size 2^63", hrEagerWith(hrPkt{ver: 4, size: 1 << 63}, hello)},
		{"eager size all ones", hrEagerWith(hrPkt{ver: 4, size: ^uint64(0)}, hello)},
		// 4. untagged tcp message without room for the rxm header.
		{"payload 0 bytes", func(uint64) []byte { return hrMsg() }},
		{"payload 1 byte", func(uint64) []byte { return hrMsg([]byte{4}) }},
		{"payload 63 bytes", func(id uint64) []byte { return hrMsg(hrPkt{ver: 4, connID: id}.bytes()[:63]) }},
		// 5. types outside 0..8, types the provider does not speak, and
		// atomic packets too short to be any (rdm_hostile_atomic_test.go
		// has the rest).
		{"type 9", hrEagerWith(hrPkt{ver: 4, typ: 9, size: 5}, hello)},
		{"type 255", hrEagerWith(hrPkt{ver: 4, typ: 255, size: 5}, hello)},
		{"SAR segment", hrEagerWith(hrPkt{ver: 4, typ: 1, segSize: 5, ctrlData: 1, size: 5}, hello)},
		{"SAR last segment", hrEagerWith(hrPkt{ver: 4, typ: 1, segSize: 5, ctrlData: 3, size: 5}, hello)},
		{"credit", hrEagerWith(hrPkt{ver: 4, typ: 6, ctrlData: 1}, nil)},
		{"atomic request of 8 bytes", hrEagerWith(hrPkt{ver: 4, typ: 4, op: 6, size: 8}, make([]byte, 8))},
		{"atomic response of op 0", hrEagerWith(hrPkt{ver: 4, typ: 5, size: 8}, make([]byte, 8))},
		{"write data", hrEagerWith(hrPkt{ver: 4, typ: 7, size: 16}, hrRndvDesc(1, [3]uint64{0, 16, 1}))},
		{"write done", hrEagerWith(hrPkt{ver: 4, typ: 8}, nil)},
		// Bad operation header of a message.
		{"eager op 2", hrEagerWith(hrPkt{ver: 4, op: 2, size: 5}, hello)},
		{"eager unknown flag", hrEagerWith(hrPkt{ver: 4, flags: 1, size: 5}, hello)},
		// 8. above the eager limit.
		{"eager 16385", hrEagerWith(hrPkt{ver: 4, size: 16385}, big)},
		{"tagged eager 16385", hrEagerWith(hrPkt{ver: 4, op: 1, tag: 7, size: 16385}, big)},
		{"raw tagged 16385", func(uint64) []byte { return hrRawTagged(7, big) }},
	})
}

// TestHostileRDMBadRendezvous: rendezvous requests whose descriptor is
// malformed (count 0 or 5, iov lengths that do not sum to the size or
// overflow, a truncated descriptor) and read-done packets for sends the
// endpoint never made cost the peer its connection and nothing else; the
// endpoint issues no read for them.
func TestHostileRDMBadRendezvous(t *testing.T) {
	iov := func(n uint64) [3]uint64 { return [3]uint64{0, n, 0x77} }
	req := func(size uint64, desc []byte) func(uint64) []byte {
		return func(id uint64) []byte { return hrRndvReq(id, 1, 0, 0, size, desc) }
	}
	readDone := func(msgID uint64) func(uint64) []byte {
		return func(id uint64) []byte { return hrMsg(hrPkt{ver: 4, typ: 3, connID: id, msgID: msgID}.bytes()) }
	}
	hrRunHostile(t, []hrCase{
		// 6. descriptor count and lengths.
		{"count 0", req(20000, hrRndvDesc(0, iov(20000)))},
		{"count 5", req(20000, hrRndvDesc(5, iov(4000), iov(4000), iov(4000), iov(4000)))},
		{"count 255", req(20000, hrRndvDesc(255, iov(20000)))},
		{"lengths sum short", req(20000, hrRndvDesc(1, iov(19999)))},
		{"lengths sum long", req(20000, hrRndvDesc(2, iov(10000), iov(10001)))},
		{"lengths overflow", req(20000, hrRndvDesc(2, iov(1<<63), iov(1<<63+20000)))},
		{"size above maxint", req(1<<63, hrRndvDesc(2, iov(1<<62), iov(1<<62)))},
		{"descriptor truncated", func(id uint64) []byte {
			return hrRndvReq(id, 1, 0, 0, 20000, hrRndvDesc(1, iov(20000))[:100])
		}},
		{"descriptor too long", func(id uint64) []byte {
			return hrRndvReq(id, 1, 0, 0, 20000, append(hrRndvDesc(1, iov(20000)), 0))
		}},
		{"tagged count 0", func(id uint64) []byte { return hrRndvReq(id, 1, 1, 9, 20000, hrRndvDesc(0)) }},
		// 7. read-done for a send that does not exist.
		{"read-done msg_id 0", readDone(0)},
		{"read-done msg_id 1", readDone(1)},
		{"read-done msg_id gen 1 slot 0", readDone(1 << 16)},
		{"read-done msg_id 0xffff", readDone(0xffff)},
		{"read-done msg_id all ones", readDone(^uint64(0))},
		{"read-done with payload", func(id uint64) []byte {
			return hrMsg(hrPkt{ver: 4, typ: 3, connID: id}.bytes(), []byte("x"))
		}},
	})
}

// TestHostileRDMTCPLayer: tcp-level violations on an RDM connection (an
// unknown op, the MSG tagged op 1, a read response or ACK nobody asked
// for) cost the peer its connection and nothing else.
func TestHostileRDMTCPLayer(t *testing.T) {
	hrRunHostile(t, []hrCase{
		{"tcp op 7", func(uint64) []byte { return hrTCP(7, 0, 0, 0, 16, 16) }},
		{"tcp version 9", func(id uint64) []byte { b := hrEager(id, []byte("hello")); b[0] = 9; return b }},
		{"tcp op 1", func(uint64) []byte { return append(hrTCP(1, 0, 0, 0, 24, 29, 7), "hello"...) }},
		{"unsolicited read response", func(uint64) []byte { return append(hrTCP(3, 0, 0, 0, 16, 24), make([]byte, 8)...) }},
		{"unsolicited ack", func(uint64) []byte { return hrTCP(0, 0, 2, 0, 16, 16) }},
		{"hdr_size lies", func(uint64) []byte { return hrTCP(0, 0, 0, 0, 120, 200) }},
	})
}

// TestHostileRDMRMA: tcp RMA on an RDM connection is checked against the
// endpoint's registrations. A read of a key never registered or beyond a
// readable region, and a write to a read-only region or beyond a writable
// one, cost the peer its connection: no byte of any region (nor of the
// memory around it) is sent or changed.
func TestHostileRDMRMA(t *testing.T) {
	cleanEnv(t)
	const roKey, rwKey = 0x1001, 0x1002
	cases := []struct {
		name string
		wire []byte
	}{
		{"read of an unregistered key", hrReadReq(0, 8, 0xdead)},
		{"read of a rendezvous-style key", hrReadReq(0, 8, 0x80000000)},
		{"read past the end", hrReadReq(60, 8, roKey)},
		{"read at the end", hrReadReq(64, 1, roKey)},
		{"read one byte too many", hrReadReq(0, 65, roKey)},
		{"read with address overflow", hrReadReq(^uint64(0), 2, roKey)},
		{"read of 2^63 bytes", hrReadReq(0, 1<<63, roKey)},
		{"read of a write-only region", hrReadReq(0, 8, rwKey)},
		{"write to a read-only region", hrWrite(0, roKey, []byte("OVERWRIT"))},
		{"write to an unregistered key", hrWrite(0, 0xdead, []byte("OVERWRIT"))},
		{"write past the end", hrWrite(60, rwKey, []byte("OVERWRIT"))},
		{"write with address overflow", hrWrite(^uint64(0)-3, rwKey, []byte("OVERWRIT"))},
		{"write of more than its iov", append(hrTCP(4, 0, 0, 1, 40, 56, 0, 8, rwKey), make([]byte, 16)...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			v := openHostileRDM(t)
			defer v.close()
			// Each region is the middle 64 bytes of a 128-byte array.
			ro := bytes.Repeat([]byte{'r'}, 128)
			rw := bytes.Repeat([]byte{'w'}, 128)
			v.register(t, ro[32:96], fi.AccessRemoteRead, roKey)
			v.register(t, rw[32:96], fi.AccessRemoteWrite, rwKey)
			s := hrPostSurvivor(t, v)
			r := hrConnect(t, v)
			defer r.c.Close()
			r.send(t, tc.wire)
			require.Empty(t, hrRequireDropped(t, v, r.c), "the endpoint sent data for a request it does not grant")
			hrNoComp(t, v.cq)
			hrRequireServes(t, v, s)
			require.Equal(t, bytes.Repeat([]byte{'r'}, 128), ro, "read-only memory changed")
			require.Equal(t, bytes.Repeat([]byte{'w'}, 128), rw, "writable memory changed outside a granted write")
		})
	}
}

// TestHostileRDMRendezvousResponse: a peer whose rendezvous message the
// endpoint reads and that answers the read with more or fewer bytes than
// asked, or hangs up instead, loses its connection; the receive it matched
// completes with an error and nothing outside that receive's buffer is
// written.
func TestHostileRDMRendezvousResponse(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		name string
		rsp  []byte // nil: hang up
	}{
		{"response too long", append(hrTCP(3, 0, 0, 1, 16, 16+32), bytes.Repeat([]byte{'!'}, 32)...)},
		{"response too short", append(hrTCP(3, 0, 0, 1, 16, 16+8), bytes.Repeat([]byte{'!'}, 8)...)},
		{"response of size 2^63", hrTCP(3, 0, 0, 1, 16, 1<<63)},
		{"hang up", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			v := openHostileRDM(t)
			defer v.close()
			s := hrPostSurvivor(t, v)
			mem := bytes.Repeat([]byte{0x5a}, 48)
			require.NoError(t, v.tagged().TRecv(mem[16:32:32], nil, fi.AddrUnspec, 42, 0, "rndv"))
			r := hrConnect(t, v)
			defer r.c.Close()
			// At once after the accept: the read must go out even when the
			// request arrives before the endpoint counts the connection
			// as connected.
			r.send(t, hrRndvReq(r.connID, 3, 1, 42, 16, hrRndvDesc(1, [3]uint64{0, 16, 0x99})))
			require.Equal(t, hrTCP(2, 0, 0, 1, 40, 40, 0, 16, 0x99), r.recv(t, v, 40), "the endpoint's read request")
			if tc.rsp == nil {
				require.NoError(t, r.c.Close())
			} else {
				r.send(t, tc.rsp)
				require.Empty(t, hrRequireDropped(t, v, r.c))
			}
			ce := hrWaitErr(t, v.cq)
			require.Equal(t, "rndv", ce.Context)
			require.NotZero(t, ce.Err)
			hrNoComp(t, v.cq)
			hrRequireServes(t, v, s)
			require.Equal(t, bytes.Repeat([]byte{0x5a}, 48), mem, "the rendezvous receive's buffer or its surroundings were written")
		})
	}
}

// TestHostileRDMBadConnectRecord: a tcp connect request whose rxm record
// is malformed is answered with a tcp CM reject (type 6, conn_data 0)
// carrying the reject record {version 1, reason 1 refused}, and the
// socket is closed; the endpoint keeps serving well-behaved peers.
func TestHostileRDMBadConnectRecord(t *testing.T) {
	cleanEnv(t)
	with := func(off int, b byte) []byte {
		rec := hrConnectRecord(1)
		rec[off] = b
		return rec
	}
	eager := func(n uint32) []byte {
		rec := hrConnectRecord(1)
		binary.LittleEndian.PutUint32(rec[8:], n)
		return rec
	}
	for _, tc := range []struct {
		name string
		rec  []byte
	}{
		{"version 2", with(0, 2)},
		{"version 0", with(0, 0)},
		{"big-endian", with(1, 1)},
		{"endianness 0", with(1, 0)},
		{"ctrl version 3", with(2, 3)},
		{"op version 2", with(3, 2)},
		{"flow_ctrl 3", with(6, 3)},
		{"eager limit 8192", eager(8192)},
		{"eager limit 16385", eager(16385)},
		{"20 bytes", hrConnectRecord(1)[:20]},
		{"25 bytes", append(hrConnectRecord(1), 0)},
		{"no record", []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			v := openHostileRDM(t)
			defer v.close()
			s := hrPostSurvivor(t, v)
			c := hrDial(t, v, tc.rec)
			defer c.Close()
			got := hrRequireDropped(t, v, c)
			require.Len(t, got, 32+2, "a tcp CM reject with a 2-byte record: %x", got)
			want := make([]byte, 32)
			want[0], want[1], want[3] = 3, 6, 2
			require.Equal(t, want, got[:32], "tcp CM reject, 2 bytes of data, conn_data 0")
			require.Equal(t, []byte{1, 1}, got[32:], "reject record: version 1, reason refused")
			hrNoComp(t, v.cq)
			hrRequireServes(t, v, s)
		})
	}
}

// TestHostileRDMOrphanRendezvous: a peer that sends a rendezvous request
// nobody receives yet and then hangs up takes its request with it: the
// next wildcard receive gets a well-behaved peer's message, not an error
// about a connection that is gone.
func TestHostileRDMOrphanRendezvous(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	v := openHostileRDM(t)
	defer v.close()
	for range 3 {
		r := hrConnect(t, v)
		r.send(t, hrRndvReq(r.connID, 7, 0, 0, 16, hrRndvDesc(1, [3]uint64{0, 16, 0x77})))
		// Half-close: the endpoint reads the request, then the end of
		// the stream, and closes its side.
		require.NoError(t, r.c.(*net.TCPConn).CloseWrite())
		hrRequireDropped(t, v, r.c)
		hrNoComp(t, v.cq)
		require.NoError(t, r.c.Close())
	}
	hrRequireServes(t, v, nil)
}
