package fabtests

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// This file holds the helpers of the rdm, tagged and rma groups: the flow
// of a libfabric application on reliable unconnected endpoints
// (FI_EP_RDM): GetInfo, fabric, domain, address vector, completion queue,
// endpoint, bind, enable, fi_getname, and fi_av_insert of the peers'
// names.

// rdmOpts selects what the peers of a test are opened with.
type rdmOpts struct {
	// caps are the capabilities asked for in the hints (FI_MSG when zero).
	caps fi.Caps
	// av is the address vector type; FI_AV_UNSPEC takes the Info's
	// DomainAttr.AVType, else FI_AV_MAP.
	av fi.AVType
	// counters opens and binds a send and a receive counter.
	counters bool
	// wait is the wait object of the CQ and the counters (fi.WaitNone
	// when zero).
	wait fi.WaitObj
	// bind, when not nil, makes further bindings (counters of other
	// kinds) once the AV, the CQ and the counters above are bound and
	// before the endpoint is enabled.
	bind func(t testing.TB, x *rdmPeer)
}

// rdmPeer is one RDM endpoint with its own fabric, domain, address vector
// and completion queue (format tagged). It embeds peer for what conn.go's
// helpers read (role, info, domain, ep, mrLocal); peer.eq and peer.cm stay
// nil and peer.got unused, polled entries go to in.
type rdmPeer struct {
	*peer
	av fi.AV
	// name is the endpoint's address (fi_getname).
	name []byte
	// in holds the entries poll read and take has not returned yet.
	in []rdmEntry
}

// rdmEntry is a completion or error entry with its source address
// (fi_cq_readfrom), fi.AddrUnspec when the Info lacks FI_SOURCE.
type rdmEntry struct {
	cqEntry
	src fi.Addr
}

// rdmInfo returns the provider's first FI_EP_RDM Info offering caps,
// skipping when there is none.
func (s *suite) rdmInfo(t testing.TB, caps fi.Caps) *fi.Info {
	t.Helper()
	h := s.hints(fi.EPTypeRDM)
	if caps == 0 {
		caps = fi.CapMsg
	}
	h.Caps |= caps
	infos, err := fi.GetInfo(s.ctx(t), "", "", 0, h)
	skipIfAbsent(t, err, "reliable unconnected (FI_EP_RDM) endpoints with "+caps.String())
	require.NotEmpty(t, infos)
	return infos[0]
}

// openRDM opens an RDM endpoint for info with its own fabric, domain, AV
// and CQ, binds and enables it and reads its name. role names it in
// failure messages.
func (s *suite) openRDM(t testing.TB, role string, info *fi.Info, o rdmOpts) *rdmPeer {
	t.Helper()
	x := &rdmPeer{peer: &peer{role: role, info: info}}
	x.mrLocal = info.DomainAttr.MRMode&fi.MRModeLocal != 0
	var err error
	x.fabric, err = fi.OpenFabric(info)
	require.NoError(t, err, "%s: open fabric", role)
	keep(t, x.fabric)
	x.domain, err = x.fabric.OpenDomain(info)
	require.NoError(t, err, "%s: open domain", role)
	keep(t, x.domain)
	typ := o.av
	if typ == fi.AVUnspec {
		typ = info.DomainAttr.AVType
	}
	if typ == fi.AVUnspec {
		typ = fi.AVMap
	}
	x.av, err = fi.OpenAV(x.domain, &fi.AVAttr{Type: typ})
	skipIfAbsent(t, err, "address vectors of type "+typ.String())
	keep(t, x.av)
	x.cq, err = eq.OpenCQ(x.domain, &eq.CQAttr{Format: eq.FormatTagged, WaitObj: o.wait})
	skipIfAbsent(t, err, "completion queues of format tagged")
	keep(t, x.cq)
	x.ep, err = ep.Open(x.domain, info)
	skipIfAbsent(t, err, "active endpoints")
	keep(t, x.ep)
	n, ok := x.ep.(ep.Namer)
	if !ok {
		t.Skipf("provider's endpoint %T has no address (ep.Namer)", x.ep)
	}
	require.NoError(t, x.ep.Bind(x.av, 0), "%s: bind av", role)
	require.NoError(t, x.ep.Bind(x.cq, fi.FlagSend|fi.FlagRecv), "%s: bind cq", role)
	if o.counters {
		x.bindCounters(t, o.wait)
	}
	if o.bind != nil {
		o.bind(t, x)
	}
	require.NoError(t, x.ep.Enable(), "%s: enable", role)
	x.name = name(t, n)
	return x
}

// insert inserts the address addr into x's AV and returns its fi.Addr.
func (x *rdmPeer) insert(t testing.TB, addr []byte) fi.Addr {
	t.Helper()
	fas, err := x.av.Insert([][]byte{addr}, 0)
	require.NoError(t, err, "%s: av insert %q", x.role, addr)
	require.Len(t, fas, 1)
	require.NotEqual(t, fi.AddrUnspec, fas[0], "%s: av insert returned FI_ADDR_NOTAVAIL", x.role)
	return fas[0]
}

// poll reads every completion and error entry x's CQ holds into x.in,
// with sources where the Info has FI_SOURCE. Reading drives progress
// under FI_PROGRESS_MANUAL.
func (x *rdmPeer) poll(t testing.TB) {
	t.Helper()
	var buf [16]eq.Completion
	var src [16]fi.Addr
	source := x.info.Caps&fi.CapSource != 0
	for {
		var n int
		var err error
		if source {
			n, err = x.cq.ReadFrom(buf[:], src[:])
		} else {
			n, err = x.cq.Read(buf[:])
		}
		for i, c := range buf[:n] {
			e := rdmEntry{cqEntry: cqEntry{c: c}, src: fi.AddrUnspec}
			if source {
				e.src = src[i]
			}
			x.in = append(x.in, e)
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, fi.EAGAIN):
			return
		case errors.Is(err, fi.EAVAIL):
			e, rerr := x.cq.ReadErr()
			require.NoError(t, rerr, "%s: ReadErr after EAVAIL", x.role)
			x.in = append(x.in, rdmEntry{cqEntry: cqEntry{err: e}, src: fi.AddrUnspec})
		default:
			require.NoError(t, err, "%s: cq read", x.role)
		}
	}
}

// requireCQEmpty polls x's CQ once and requires that it held nothing and
// that nothing read earlier is left untaken.
func (x *rdmPeer) requireCQEmpty(t testing.TB) {
	t.Helper()
	x.poll(t)
	require.Empty(t, x.in, "%s: unexpected completions", x.role)
}

// mesh is a set of RDM endpoints of one process. Every wait polls all of
// them, since under FI_PROGRESS_MANUAL each side, a passive RMA target
// too, moves only while its CQ is read.
type mesh struct {
	s     *suite
	peers []*rdmPeer
	// addr[i][j] is peer j's fi.Addr in peer i's AV, fi.AddrUnspec where
	// it was not inserted.
	addr [][]fi.Addr
}

// rdm opens n RDM endpoints named by roles for one Info offering o.caps.
// No address is inserted yet: see connect and insertPeer.
func (s *suite) rdm(t testing.TB, o rdmOpts, roles ...string) *mesh {
	t.Helper()
	return s.rdmOn(t, s.rdmInfo(t, o.caps), o, roles...)
}

// rdmOn is rdm for a given Info (o.caps is not used).
func (s *suite) rdmOn(t testing.TB, info *fi.Info, o rdmOpts, roles ...string) *mesh {
	t.Helper()
	m := &mesh{s: s}
	for _, r := range roles {
		m.peers = append(m.peers, s.openRDM(t, r, info, o))
	}
	m.addr = make([][]fi.Addr, len(roles))
	for i := range m.addr {
		m.addr[i] = make([]fi.Addr, len(roles))
		for j := range m.addr[i] {
			m.addr[i][j] = fi.AddrUnspec
		}
	}
	return m
}

// rdmPair is rdm for two endpoints "a" and "b", each in the other's AV.
func (s *suite) rdmPair(t testing.TB, o rdmOpts) *mesh {
	t.Helper()
	m := s.rdm(t, o, "a", "b")
	m.connect(t)
	return m
}

// insertPeer inserts peer j's name into peer i's AV.
func (m *mesh) insertPeer(t testing.TB, i, j int) {
	t.Helper()
	m.addr[i][j] = m.peers[i].insert(t, m.peers[j].name)
}

// connect inserts every peer into every other peer's AV, in index order.
func (m *mesh) connect(t testing.TB) {
	t.Helper()
	for i := range m.peers {
		for j := range m.peers {
			if i != j {
				m.insertPeer(t, i, j)
			}
		}
	}
}

// poll polls every peer.
func (m *mesh) poll(t testing.TB) {
	t.Helper()
	for _, x := range m.peers {
		x.poll(t)
	}
}

// until polls every peer until cond holds, failing at the suite's timeout
// with what.
func (m *mesh) until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx := m.s.ctx(t)
	for {
		m.poll(t)
		if cond() {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("timed out after %v waiting for %s (%s)", m.s.cfg.Timeout, what, m.pending())
		}
		runtime.Gosched()
	}
}

// pending describes the entries read and not taken, for failures.
func (m *mesh) pending() string {
	parts := make([]string, len(m.peers))
	for i, x := range m.peers {
		parts[i] = fmt.Sprintf("%s has %d entries", x.role, len(x.in))
	}
	return strings.Join(parts, ", ")
}

// settle polls every peer for d: long enough for a message that is going
// to arrive to arrive, for tests that check that something did not
// happen.
func (m *mesh) settle(t testing.TB, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		m.poll(t)
		runtime.Gosched()
	}
}

// post calls op until it returns something other than fi.EAGAIN, polling
// every peer meanwhile, and requires success.
func (m *mesh) post(t testing.TB, what string, op func() error) {
	t.Helper()
	ctx := m.s.ctx(t)
	for {
		err := op()
		if !errors.Is(err, fi.EAGAIN) {
			require.NoError(t, err, what)
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: still fi.EAGAIN after %v", what, m.s.cfg.Timeout)
		}
		m.poll(t)
		runtime.Gosched()
	}
}

// warm exchanges one message from peer i to peer j and takes both
// completions: a provider may open its connection to a peer lazily and
// answer the first sends with fi.EAGAIN until it is up (tcp;ofi_rxm
// does), so tests that count on sends being accepted at once warm the
// path first.
func (m *mesh) warm(t testing.TB, i, j int) {
	t.Helper()
	a, b := m.peers[i], m.peers[j]
	buf := make([]byte, 8)
	var rdesc, sdesc any
	if b.mrLocal || a.mrLocal {
		for _, x := range []struct {
			p *rdmPeer
			d *any
		}{{b, &rdesc}, {a, &sdesc}} {
			if !x.p.mrLocal {
				continue
			}
			mr, err := fi.RegisterMR(x.p.domain, &fi.MRAttr{Buf: buf, Access: fi.AccessSend | fi.AccessRecv}, 0)
			require.NoError(t, err, "warm: register")
			t.Cleanup(func() { _ = mr.Close() })
			*x.d = mr.Desc()
		}
	}
	require.NoError(t, b.msg(t).Recv(buf, rdesc, fi.AddrUnspec, "warm-recv"), "warm: recv")
	m.post(t, "warm: send", func() error { return a.msg(t).Send(buf[:0], sdesc, m.addr[i][j], "warm-send") })
	m.take(t, b, 1)
	m.take(t, a, 1)
}

// take polls until x has n entries and returns them, removed from x.in.
func (m *mesh) take(t testing.TB, x *rdmPeer, n int) []rdmEntry {
	t.Helper()
	m.until(t, x.role+" completions", func() bool { return len(x.in) >= n })
	out := append([]rdmEntry(nil), x.in[:n]...)
	x.in = x.in[n:]
	return out
}

// completions is take requiring no error entry among them.
func (m *mesh) completions(t testing.TB, x *rdmPeer, n int) []rdmEntry {
	t.Helper()
	out := m.take(t, x, n)
	for i, e := range out {
		require.Nil(t, e.err, "%s: completion %d is an error entry: %v", x.role, i, e.err)
	}
	return out
}

// completion is completions for one entry.
func (m *mesh) completion(t testing.TB, x *rdmPeer) rdmEntry {
	t.Helper()
	return m.completions(t, x, 1)[0]
}

// cqError takes x's next entry and requires an error entry with a code.
func (m *mesh) cqError(t testing.TB, x *rdmPeer) *eq.CQError {
	t.Helper()
	e := m.take(t, x, 1)[0]
	require.NotNil(t, e.err, "%s: got completion %+v, want an error entry", x.role, e.c)
	require.NotZero(t, e.err.Err, "%s: error entry without a code", x.role)
	require.NotEqual(t, fi.EOTHER, e.err.Err, "%s: error entry: %v", x.role, e.err)
	return e.err
}

// requireSource checks a receive's source (fi_cq_readfrom) where the Info
// has FI_SOURCE.
func requireSource(t testing.TB, x *rdmPeer, e rdmEntry, want fi.Addr) {
	t.Helper()
	if x.info.Caps&fi.CapSource != 0 {
		require.Equal(t, want, e.src, "%s: the receive's source address (FI_SOURCE)", x.role)
	}
}

// msg returns x's message ability, skipping when it lacks one.
func (x *rdmPeer) msg(t testing.TB) ep.Msg { return msgOf(t, x.peer) }
