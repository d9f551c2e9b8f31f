package kit_test

import (
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

// recorder is a Poster that keeps the last operation of each side.
type recorder struct {
	tx, rx kit.Op
	ntx    int
	nrx    int
}

func (r *recorder) PostTx(op kit.Op) error { r.tx, r.ntx = op, r.ntx+1; return nil }
func (r *recorder) PostRx(op kit.Op) error { r.rx, r.nrx = op, r.nrx+1; return nil }

// adapted is an endpoint with every ability of the adapter.
type adapted struct {
	kit.MsgOps
	kit.TaggedOps
	kit.RMAOps
}

const (
	txDef = fi.FlagCompletion | fi.FlagDeliveryComplete
	rxDef = fi.FlagCompletion
)

func newAdapted() (*adapted, *recorder) {
	r := &recorder{}
	info := &fi.Info{TxAttr: &fi.TxAttr{OpFlags: txDef}, RxAttr: &fi.RxAttr{OpFlags: rxDef}}
	o := kit.NewOps(r, "test", info)
	return &adapted{kit.MsgOps{Ops: o}, kit.TaggedOps{Ops: o}, kit.RMAOps{Ops: o}}, r
}

// TestOpsMapping checks what every wide call hands the provider: the
// kind, the buffers in the right field, the flags each call form gets,
// and the inject, data, tag and remote fields.
func TestOpsMapping(t *testing.T) {
	a, r := newAdapted()
	buf := []byte("abc")
	iov := [][]byte{buf, buf}
	descs := []any{"d0", "d1"}
	const dest, tag, ign, data, raddr, key = fi.Addr(7), 0x55, 0x0f, 0xdada, 0x1000, 42
	injF := txDef&^fi.FlagCompletion | fi.FlagInject
	msgF := fi.FlagInject | fi.FlagRemoteCQData

	tx := []struct {
		name string
		call func() error
		want kit.Op
	}{
		{"Send", func() error { return a.Send(buf, "d", dest, "c") },
			kit.Op{Kind: kit.OpSend, Buf: buf, Desc: "d", Addr: dest, Context: "c", Flags: txDef}},
		{"SendV", func() error { return a.SendV(iov, descs, dest, "c") },
			kit.Op{Kind: kit.OpSend, IOV: iov, Descs: descs, Addr: dest, Context: "c", Flags: txDef}},
		{"SendMsg", func() error {
			return a.SendMsg(&ep.Message{IOV: iov, Desc: descs, Addr: dest, Context: "c", Data: data}, msgF)
		}, kit.Op{Kind: kit.OpSend, IOV: iov, Descs: descs, Addr: dest, Context: "c", Data: data, Flags: msgF}},
		{"Inject", func() error { return a.Inject(buf, dest) },
			kit.Op{Kind: kit.OpSend, Inject: true, Buf: buf, Addr: dest, Flags: injF}},
		{"SendData", func() error { return a.SendData(buf, "d", data, dest, "c") },
			kit.Op{Kind: kit.OpSend, Buf: buf, Desc: "d", Addr: dest, Context: "c", Data: data, Flags: txDef | fi.FlagRemoteCQData}},
		{"InjectData", func() error { return a.InjectData(buf, data, dest) },
			kit.Op{Kind: kit.OpSend, Inject: true, Buf: buf, Addr: dest, Data: data, Flags: injF | fi.FlagRemoteCQData}},
		{"TSend", func() error { return a.TSend(buf, "d", dest, tag, "c") },
			kit.Op{Kind: kit.OpTSend, Buf: buf, Desc: "d", Addr: dest, Tag: tag, Context: "c", Flags: txDef}},
		{"TSendV", func() error { return a.TSendV(iov, descs, dest, tag, "c") },
			kit.Op{Kind: kit.OpTSend, IOV: iov, Descs: descs, Addr: dest, Tag: tag, Context: "c", Flags: txDef}},
		{"TSendMsg", func() error {
			return a.TSendMsg(&ep.TaggedMessage{IOV: iov, Desc: descs, Addr: dest, Tag: tag, Context: "c", Data: data}, msgF)
		}, kit.Op{Kind: kit.OpTSend, IOV: iov, Descs: descs, Addr: dest, Tag: tag, Context: "c", Data: data, Flags: msgF}},
		{"TInject", func() error { return a.TInject(buf, dest, tag) },
			kit.Op{Kind: kit.OpTSend, Inject: true, Buf: buf, Addr: dest, Tag: tag, Flags: injF}},
		{"TSendData", func() error { return a.TSendData(buf, "d", data, dest, tag, "c") },
			kit.Op{Kind: kit.OpTSend, Buf: buf, Desc: "d", Addr: dest, Tag: tag, Context: "c", Data: data, Flags: txDef | fi.FlagRemoteCQData}},
		{"TInjectData", func() error { return a.TInjectData(buf, data, dest, tag) },
			kit.Op{Kind: kit.OpTSend, Inject: true, Buf: buf, Addr: dest, Tag: tag, Data: data, Flags: injF | fi.FlagRemoteCQData}},
		{"Read", func() error { return a.Read(buf, "d", dest, raddr, key, "c") },
			kit.Op{Kind: kit.OpRead, Buf: buf, Desc: "d", Addr: dest, RAddr: raddr, Key: key, Context: "c", Flags: txDef}},
		{"ReadV", func() error { return a.ReadV(iov, descs, dest, raddr, key, "c") },
			kit.Op{Kind: kit.OpRead, IOV: iov, Descs: descs, Addr: dest, RAddr: raddr, Key: key, Context: "c", Flags: txDef}},
		{"Write", func() error { return a.Write(buf, "d", dest, raddr, key, "c") },
			kit.Op{Kind: kit.OpWrite, Buf: buf, Desc: "d", Addr: dest, RAddr: raddr, Key: key, Context: "c", Flags: txDef}},
		{"WriteV", func() error { return a.WriteV(iov, descs, dest, raddr, key, "c") },
			kit.Op{Kind: kit.OpWrite, IOV: iov, Descs: descs, Addr: dest, RAddr: raddr, Key: key, Context: "c", Flags: txDef}},
		{"InjectWrite", func() error { return a.InjectWrite(buf, dest, raddr, key) },
			kit.Op{Kind: kit.OpWrite, Inject: true, Buf: buf, Addr: dest, RAddr: raddr, Key: key, Flags: injF}},
		{"WriteData", func() error { return a.WriteData(buf, "d", data, dest, raddr, key, "c") },
			kit.Op{Kind: kit.OpWrite, Buf: buf, Desc: "d", Addr: dest, RAddr: raddr, Key: key, Context: "c", Data: data, Flags: txDef | fi.FlagRemoteCQData}},
		{"InjectWriteData", func() error { return a.InjectWriteData(buf, data, dest, raddr, key) },
			kit.Op{Kind: kit.OpWrite, Inject: true, Buf: buf, Addr: dest, RAddr: raddr, Key: key, Data: data, Flags: injF | fi.FlagRemoteCQData}},
	}
	for i, c := range tx {
		require.NoError(t, c.call(), c.name)
		require.Equal(t, i+1, r.ntx, c.name)
		require.Equal(t, c.want, r.tx, c.name)
	}

	rmaIOV := []ep.RMAIOV{{Addr: raddr, Len: 6, Key: key}, {Addr: 2 * raddr, Len: 1, Key: key + 1}}
	for _, c := range []struct {
		kind kit.OpKind
		call func(*ep.RMAMessage, fi.Flags) error
	}{{kit.OpRead, a.ReadMsg}, {kit.OpWrite, a.WriteMsg}} {
		msg := &ep.RMAMessage{IOV: iov, Desc: descs, Addr: dest, RMAIOV: rmaIOV, Context: "c", Data: data}
		require.NoError(t, c.call(msg, msgF))
		require.Equal(t, kit.Op{Kind: c.kind, IOV: iov, Descs: descs, Addr: dest, RAddr: raddr, Key: key,
			RMAIOV: rmaIOV, Context: "c", Data: data, Flags: msgF}, r.tx, c.kind.String())
	}

	rx := []struct {
		name string
		call func() error
		want kit.Op
	}{
		{"Recv", func() error { return a.Recv(buf, "d", dest, "c") },
			kit.Op{Kind: kit.OpRecv, Buf: buf, Desc: "d", Addr: dest, Context: "c", Flags: rxDef}},
		{"RecvV", func() error { return a.RecvV(iov, descs, dest, "c") },
			kit.Op{Kind: kit.OpRecv, IOV: iov, Descs: descs, Addr: dest, Context: "c", Flags: rxDef}},
		{"RecvMsg", func() error {
			return a.RecvMsg(&ep.Message{IOV: iov, Desc: descs, Addr: dest, Context: "c"}, fi.FlagMore)
		}, kit.Op{Kind: kit.OpRecv, IOV: iov, Descs: descs, Addr: dest, Context: "c", Flags: fi.FlagMore}},
		{"TRecv", func() error { return a.TRecv(buf, "d", dest, tag, ign, "c") },
			kit.Op{Kind: kit.OpTRecv, Buf: buf, Desc: "d", Addr: dest, Tag: tag, Ignore: ign, Context: "c", Flags: rxDef}},
		{"TRecvV", func() error { return a.TRecvV(iov, descs, dest, tag, ign, "c") },
			kit.Op{Kind: kit.OpTRecv, IOV: iov, Descs: descs, Addr: dest, Tag: tag, Ignore: ign, Context: "c", Flags: rxDef}},
		{"TRecvMsg", func() error {
			return a.TRecvMsg(&ep.TaggedMessage{IOV: iov, Desc: descs, Addr: dest, Tag: tag, Ignore: ign, Context: "c"}, 0)
		}, kit.Op{Kind: kit.OpTRecv, IOV: iov, Descs: descs, Addr: dest, Tag: tag, Ignore: ign, Context: "c"}},
	}
	for i, c := range rx {
		require.NoError(t, c.call(), c.name)
		require.Equal(t, i+1, r.nrx, c.name)
		require.Equal(t, c.want, r.rx, c.name)
	}
}

// TestOpsForms checks Op's helpers on the two call forms: a vector call
// with a nil vector is still a vector call of length 0, and CopyIOV
// refuses more buffers than the provider's array holds.
func TestOpsForms(t *testing.T) {
	a, r := newAdapted()
	require.NoError(t, a.SendV(nil, nil, 0, nil))
	require.True(t, r.tx.Vector())
	require.Zero(t, r.tx.Len())
	var dst [2][]byte
	n, err := r.tx.CopyIOV(dst[:], "test")
	require.NoError(t, err)
	require.Zero(t, n)

	require.NoError(t, a.Send(nil, nil, 0, nil))
	require.False(t, r.tx.Vector(), "a single-buffer call with a nil buffer")
	n, err = r.tx.CopyIOV(dst[:], "test")
	require.NoError(t, err)
	require.Equal(t, 1, n)

	require.NoError(t, a.SendV([][]byte{{1}, {2, 3}, {4}}, nil, 0, nil))
	require.Equal(t, 4, r.tx.Len())
	_, err = r.tx.CopyIOV(dst[:], "test")
	require.ErrorIs(t, err, fi.EINVAL)
	require.ErrorContains(t, err, "test: send: 3 iovecs, the limit is 2")

	for _, err := range []error{a.SendMsg(nil, 0), a.RecvMsg(nil, 0), a.TSendMsg(nil, 0), a.TRecvMsg(nil, 0),
		a.ReadMsg(nil, 0), a.WriteMsg(nil, 0)} {
		require.ErrorIs(t, err, fi.EINVAL)
		require.ErrorContains(t, err, "test: ")
		require.ErrorContains(t, err, "nil message")
	}
}

// TestOpsAllocs: the adapter adds no allocation to any call.
func TestOpsAllocs(t *testing.T) {
	a, _ := newAdapted()
	buf := make([]byte, 64)
	iov := [][]byte{buf, buf}
	msg := &ep.Message{IOV: iov}
	ctx := new(int)
	for name, f := range map[string]func(){
		"Send":    func() { _ = a.Send(buf, nil, 1, ctx) },
		"SendV":   func() { _ = a.SendV(iov, nil, 1, ctx) },
		"SendMsg": func() { _ = a.SendMsg(msg, 0) },
		"Inject":  func() { _ = a.Inject(buf, 1) },
		"TSend":   func() { _ = a.TSend(buf, nil, 1, 9, ctx) },
		"TRecv":   func() { _ = a.TRecv(buf, nil, 1, 9, 0, ctx) },
		"Recv":    func() { _ = a.Recv(buf, nil, 1, ctx) },
		"Write":   func() { _ = a.Write(buf, nil, 1, 0, 0, ctx) },
		"Read":    func() { _ = a.Read(buf, nil, 1, 0, 0, ctx) },
		"CopyIOV": func() {
			op := kit.Op{IOV: iov}
			var dst [4][]byte
			_, _ = op.CopyIOV(dst[:], "test")
		},
	} {
		require.Zero(t, testing.AllocsPerRun(100, f), name)
	}
}

// BenchmarkOpsSend is the adapter's cost per call, over a Poster that
// does nothing.
func BenchmarkOpsSend(b *testing.B) {
	a, _ := newAdapted()
	buf := make([]byte, 64)
	ctx := new(int)
	b.ReportAllocs()
	for b.Loop() {
		_ = a.Send(buf, nil, 1, ctx)
	}
}
