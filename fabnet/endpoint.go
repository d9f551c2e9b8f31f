package fabnet

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// DefaultSpin is how long the blocking operations poll a completion queue
// (fi_cq_read, as fi_pingpong waits) before they sleep in its blocking
// read (fi_cq_sread), when EndpointConfig.Spin is zero: longer than a small message's round trip over tcp on loopback
// (about 15 µs), and about what one wake-up of a sleeping thread costs on
// the virtual machines gofabric is measured on (10 to 60 µs; README,
// Performance).
const DefaultSpin = 50 * time.Microsecond

// EndpointConfig tunes the objects NewEndpoint, Dial, Listen and OpenRDM
// open. The zero value (and a nil *EndpointConfig) is ready to use. It
// plays the part of the rdma_create_ep(3) qp_init_attr argument.
type EndpointConfig struct {
	// Hints are fi_getinfo(3)'s hints for NewEndpoint: nil asks for an
	// FI_EP_RDM endpoint with FI_MSG, and hints without an endpoint type
	// get FI_EP_RDM. Dial and Listen take theirs from the Dialer and the
	// ListenConfig.
	Hints *fi.Info
	// Flags are NewEndpoint's fi_getinfo flags: fi.FlagSource makes node
	// and service the endpoint's own address rather than a peer's.
	Flags fi.Flags
	// CQSize is each completion queue's size (fi_cq_attr.size); zero
	// lets the provider choose.
	CQSize int
	// AVType is the address vector's type (fi_av_attr.type) for FI_EP_RDM
	// and FI_EP_DGRAM endpoints: fi.AVUnspec takes the domain's, else
	// FI_AV_MAP.
	AVType fi.AVType
	// Spin is how long the blocking operations poll before they sleep:
	// zero means DefaultSpin, a negative value never polls.
	Spin time.Duration
}

// Endpoint is an active endpoint with every object it needs, opened,
// bound and enabled in one call: librdmacm's rdma_create_ep(3) result
// (an rdma_cm_id with its queue pair). The exported fields are the
// objects themselves, for the calls of the fi, eq and ep packages that
// Endpoint does not wrap; they stay owned by the Endpoint, which closes
// them. EQ is nil except on FI_EP_MSG endpoints, AV on them.
//
// The blocking operations (Send, Recv, SendTo, RecvFrom, TSend, TRecv,
// Read, Write) read TxCQ and RxCQ themselves: see the package
// documentation. An Endpoint is safe for concurrent use.
type Endpoint struct {
	// Info is the fi_getinfo(3) entry the endpoint was opened from.
	Info   *fi.Info
	Fabric fi.Fabric
	Domain fi.Domain
	// EQ is the event queue of an FI_EP_MSG endpoint (fi_eq(3)).
	EQ eq.EventQueue
	// AV is the address vector of FI_EP_RDM and FI_EP_DGRAM endpoints
	// (fi_av(3)).
	AV fi.AV
	// TxCQ reports sends and RMA (bound with FI_SEND), RxCQ receives
	// (FI_RECV).
	TxCQ, RxCQ eq.CompletionQueue
	// EP is the endpoint (fi_endpoint(3)).
	EP ep.Endpoint

	// The endpoint's abilities, found once at open (nil when absent,
	// with the reason in the matching error).
	msg       ep.Msg
	tagged    ep.Tagged
	rma       ep.RMA
	cm        ep.CM
	msgErr    error
	taggedErr error
	rmaErr    error
	// injectSize is tx_attr.inject_size: Send and TSend inject messages
	// up to it (-1: never).
	injectSize int

	tx, rx waitQueue
	// closed is set by Close before it closes anything, so that calls
	// that fail meanwhile report the endpoint closed.
	closed atomic.Bool
	// release drops the fabric: it closes it, or a reference on a shared
	// one (a listener's).
	release func() error
}

// NewEndpoint is rdma_create_ep(3) (with rdma_getaddrinfo before it):
// it asks provider prov ("" for any) for entries matching node, service,
// cfg.Flags and cfg.Hints (fi_getinfo), and opens the first that opens:
// fabric (fi_fabric), domain (fi_domain), an event queue for FI_EP_MSG
// endpoints (fi_eq_open), an address vector for the others (fi_av_open),
// a completion queue for sends and one for receives (fi_cq_open), and
// the endpoint (fi_endpoint), bound to them (fi_ep_bind) and enabled
// (fi_enable). An FI_EP_MSG endpoint is not connected: connect with the
// EP's ep.CM, or use Dial. Close closes everything in order.
func NewEndpoint(ctx context.Context, prov, node, service string, cfg *EndpointConfig) (*Endpoint, error) {
	if cfg == nil {
		cfg = &EndpointConfig{}
	}
	hints := prepHints(cfg.Hints, prov, fi.EPTypeUnspec, fi.CapMsg)
	if hints.EPAttr.Type == fi.EPTypeUnspec {
		hints.EPAttr.Type = fi.EPTypeRDM
	}
	infos, err := fi.GetInfo(ctx, node, service, cfg.Flags, hints)
	if err != nil {
		return nil, errors.Wrapf(err, "fabnet: endpoint %s", where(prov, node, service))
	}
	return openFirst(ctx, infos, cfg, where(prov, node, service))
}

// OpenRDM opens a reliable unconnected (FI_EP_RDM) endpoint of provider
// prov with its address vector and queues, bound and enabled: the
// net.ListenPacket of fabrics. With node or service set they are the
// endpoint's own address (fi.FlagSource: "127.0.0.1" and "0" for a port
// the provider picks); with both empty the provider names the endpoint.
// It asks for FI_MSG, FI_TAGGED, FI_RMA and FI_SOURCE, and for fewer of
// them when the provider does not offer all. Peers are reached through
// Insert or InsertSvc; Name gives the address to tell them.
func OpenRDM(ctx context.Context, prov, node, service string) (*Endpoint, error) {
	var flags fi.Flags
	if node != "" || service != "" {
		flags = fi.FlagSource
	}
	var first error
	for _, caps := range []fi.Caps{fi.CapMsg | fi.CapTagged | fi.CapRMA | fi.CapSource, fi.CapMsg | fi.CapTagged, fi.CapMsg} {
		h := prepHints(nil, prov, fi.EPTypeRDM, caps)
		e, err := NewEndpoint(ctx, prov, node, service, &EndpointConfig{Hints: h, Flags: flags})
		if err == nil {
			return e, nil
		}
		if first == nil {
			first = err
		}
		if fi.Code(err) != fi.ENODATA || ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, first
}

// openFirst opens an Endpoint from the first of infos that opens, as
// net's dialSerial tries addresses: the first success, or the first
// error.
func openFirst(ctx context.Context, infos []*fi.Info, cfg *EndpointConfig, what string) (*Endpoint, error) {
	var first error
	for _, info := range infos {
		e, err := openEndpoint(info, cfg)
		if err == nil {
			return e, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = errors.Wrap(fi.ENODATA, "no entries")
	}
	return nil, errors.Wrapf(first, "fabnet: endpoint %s", what)
}

// OpenEndpoint is NewEndpoint for one fi_getinfo(3) entry: rdma_create_ep
// given its rdma_addrinfo. It opens the entry's own fabric.
func OpenEndpoint(info *fi.Info, cfg *EndpointConfig) (*Endpoint, error) {
	e, err := openEndpoint(info, cfg)
	if err != nil {
		return nil, errors.Wrap(err, "fabnet: open endpoint")
	}
	return e, nil
}

// openEndpoint is OpenEndpoint with errors that name the step only.
func openEndpoint(info *fi.Info, cfg *EndpointConfig) (*Endpoint, error) {
	if info == nil || info.FabricAttr == nil {
		return nil, errors.Wrap(fi.EINVAL, "info without fabric attributes")
	}
	f, err := fi.OpenFabric(info)
	if err != nil {
		return nil, errors.Wrap(err, "open fabric")
	}
	e, err := openOn(f, f.Close, info, info, cfg)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return e, nil
}

// closers is a stack of Close calls, run newest first: the unwinding of a
// failed open and the order of Endpoint.Close.
type closers []func() error

func (c *closers) push(f fi.Fid) { *c = append(*c, f.Close) }

// run closes everything, newest first, and returns the first error.
func (c closers) run() error {
	var first error
	for i := len(c) - 1; i >= 0; i-- {
		if err := c[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// openOn opens an Endpoint's objects on fabric f from info: the domain
// from domInfo (the listener's entry, for an accepted connection, is
// info itself otherwise). release drops f when the Endpoint closes; on
// error openOn closes what it opened but leaves f to the caller.
func openOn(f fi.Fabric, release func() error, domInfo, info *fi.Info, cfg *EndpointConfig) (_ *Endpoint, err error) {
	if cfg == nil {
		cfg = &EndpointConfig{}
	}
	e := &Endpoint{Info: info, Fabric: f, release: release}
	var undo closers
	defer func() {
		if err != nil {
			_ = undo.run()
		}
	}()
	step := func(what string, err error) error {
		if err == nil {
			return nil
		}
		return errors.Wrap(err, what)
	}
	if e.Domain, err = f.OpenDomain(domInfo); err != nil {
		return nil, step("open domain", err)
	}
	undo.push(e.Domain)
	typ := fi.EPTypeUnspec
	if info.EPAttr != nil {
		typ = info.EPAttr.Type
	}
	if typ == fi.EPTypeMsg {
		if e.EQ, err = eq.OpenEQ(f, &eq.Attr{}); err != nil {
			return nil, step("open eq", err)
		}
		undo.push(e.EQ)
	} else {
		avType := cfg.AVType
		if avType == fi.AVUnspec && info.DomainAttr != nil {
			avType = info.DomainAttr.AVType
		}
		if avType == fi.AVUnspec {
			avType = fi.AVMap
		}
		if e.AV, err = fi.OpenAV(e.Domain, &fi.AVAttr{Type: avType}); err != nil {
			return nil, step("open av", err)
		}
		undo.push(e.AV)
	}
	format := eq.FormatData
	if info.Caps&fi.CapTagged != 0 {
		format = eq.FormatTagged
	}
	cqAttr := eq.CQAttr{Size: cfg.CQSize, Format: format}
	if e.TxCQ, err = eq.OpenCQ(e.Domain, &cqAttr); err != nil {
		return nil, step("open tx cq", err)
	}
	undo.push(e.TxCQ)
	if e.RxCQ, err = eq.OpenCQ(e.Domain, &cqAttr); err != nil {
		return nil, step("open rx cq", err)
	}
	undo.push(e.RxCQ)
	if e.EP, err = ep.Open(e.Domain, info); err != nil {
		return nil, step("open endpoint", err)
	}
	undo.push(e.EP)
	if e.EQ != nil {
		if err = e.EP.Bind(e.EQ, 0); err != nil {
			return nil, step("bind eq", err)
		}
	}
	if e.AV != nil {
		if err = e.EP.Bind(e.AV, 0); err != nil {
			return nil, step("bind av", err)
		}
	}
	if err = e.EP.Bind(e.TxCQ, fi.FlagSend); err != nil {
		return nil, step("bind tx cq", err)
	}
	if err = e.EP.Bind(e.RxCQ, fi.FlagRecv); err != nil {
		return nil, step("bind rx cq", err)
	}
	if err = e.EP.Enable(); err != nil {
		return nil, step("enable endpoint", err)
	}
	e.msg, e.msgErr = ep.AsMsg(e.EP)
	e.tagged, e.taggedErr = ep.AsTagged(e.EP)
	e.rma, e.rmaErr = ep.AsRMA(e.EP)
	if typ == fi.EPTypeMsg {
		if e.cm, err = ep.AsCM(e.EP); err != nil {
			return nil, step("connection management", err)
		}
	}
	e.injectSize = -1
	if info.TxAttr != nil && info.TxAttr.InjectSize > 0 {
		e.injectSize = info.TxAttr.InjectSize
	}
	spin := cfg.Spin
	if spin == 0 {
		spin = DefaultSpin
	}
	e.tx.init(e.TxCQ, spin, false)
	e.rx.init(e.RxCQ, spin, info.Caps&fi.CapSource != 0)
	if mrs := newMRCache(e.Domain, info); mrs != nil {
		e.tx.mrs, e.rx.mrs = mrs, mrs
	}
	return e, nil
}

// Close closes the endpoint and everything NewEndpoint opened for it, in
// order (rdma_destroy_ep(3); fi_close(3) on the endpoint, its queues,
// address vector, domain and fabric): the endpoint first, so that its
// pending operations complete with fi.ECANCELED and the blocking calls
// waiting for them return an error matching net.ErrClosed. It returns the
// first error; a second Close returns fi.EBADF.
func (e *Endpoint) Close() error {
	if e.closed.Swap(true) {
		return errors.Wrap(fi.EBADF, "fabnet: close: endpoint already closed")
	}
	c := closers{e.EP.Close, e.TxCQ.Close, e.RxCQ.Close}
	if e.tx.mrs != nil {
		c = append(c, e.tx.mrs.close)
	}
	if e.EQ != nil {
		c = append(c, e.EQ.Close)
	}
	if e.AV != nil {
		c = append(c, e.AV.Close)
	}
	c = append(c, e.Domain.Close, e.release)
	var first error
	for _, f := range c {
		if err := f(); err != nil && first == nil {
			first = errors.Wrap(err, "fabnet: close")
		}
	}
	return first
}

// Name returns the endpoint's address (fi_getname(3)), the one peers
// insert into their address vectors.
func (e *Endpoint) Name() ([]byte, error) {
	n, ok := e.EP.(ep.Namer)
	if !ok {
		return nil, errors.Wrapf(fi.ENOSYS, "fabnet: name: %T has no address", e.EP)
	}
	return nameOf(n)
}

// nameOf reads n's whole address, growing the buffer on fi.ETOOSMALL.
func nameOf(n ep.Namer) ([]byte, error) {
	buf := make([]byte, 128)
	for {
		k, err := n.Name(buf)
		if err == nil {
			return buf[:k], nil
		}
		if fi.Code(err) != fi.ETOOSMALL || k <= len(buf) {
			return nil, errors.Wrap(err, "fabnet: name")
		}
		buf = make([]byte, k)
	}
}

// Insert adds a peer's address (what its Name returned) to the address
// vector and returns the fi.Addr to send to (fi_av_insert(3)).
func (e *Endpoint) Insert(name []byte) (fi.Addr, error) {
	if e.AV == nil {
		return fi.AddrUnspec, errors.Wrap(fi.ENOSYS, "fabnet: insert: the endpoint has no address vector (FI_EP_MSG)")
	}
	addrs, err := e.AV.Insert([][]byte{name}, 0)
	if err != nil {
		return fi.AddrUnspec, errors.Wrap(err, "fabnet: insert")
	}
	return addrs[0], nil
}

// InsertSvc adds the peer at node and service (a host and port for
// socket providers) to the address vector (fi_av_insertsvc(3)).
func (e *Endpoint) InsertSvc(node, service string) (fi.Addr, error) {
	if e.AV == nil {
		return fi.AddrUnspec, errors.Wrap(fi.ENOSYS, "fabnet: insert: the endpoint has no address vector (FI_EP_MSG)")
	}
	a, err := e.AV.InsertSvc(node, service, 0)
	if err != nil {
		return fi.AddrUnspec, errors.Wrapf(err, "fabnet: insert %s:%s", node, service)
	}
	return a, nil
}

// prepHints returns a copy of h with every attribute allocated, the
// provider name prov (when not empty) and the endpoint type typ (when
// not fi.EPTypeUnspec and h has none), and caps when h is nil.
func prepHints(h *fi.Info, prov string, typ fi.EPType, caps fi.Caps) *fi.Info {
	user := h != nil
	h = h.Clone()
	if h.TxAttr == nil {
		h.TxAttr = &fi.TxAttr{}
	}
	if h.RxAttr == nil {
		h.RxAttr = &fi.RxAttr{}
	}
	if h.EPAttr == nil {
		h.EPAttr = &fi.EPAttr{}
	}
	if h.DomainAttr == nil {
		// The MR modes fabnet follows for its caller: FI_MR_LOCAL (its
		// blocking calls register buffers themselves), FI_MR_ALLOCATED
		// (Go memory is allocated), and for RMA FI_MR_VIRT_ADDR and
		// FI_MR_PROV_KEY, which the caller sees in the endpoint's Info
		// (addresses and keys of Read and Write). Hints with domain
		// attributes keep their own modes, plus FI_MR_LOCAL.
		h.DomainAttr = &fi.DomainAttr{MRMode: fi.MRModeVirtAddr | fi.MRModeAllocated | fi.MRModeProvKey}
	}
	h.DomainAttr.MRMode |= fi.MRModeLocal
	if h.FabricAttr == nil {
		h.FabricAttr = &fi.FabricAttr{}
	}
	if prov != "" {
		h.FabricAttr.ProvName = prov
	}
	if typ != fi.EPTypeUnspec && h.EPAttr.Type == fi.EPTypeUnspec {
		h.EPAttr.Type = typ
	}
	if !user {
		h.Caps = caps
	}
	return h
}

// where names a provider and address in messages.
func where(prov, node, service string) string {
	if prov == "" {
		prov = "any provider"
	}
	switch {
	case node == "" && service == "":
		return prov
	case service == "":
		return prov + " " + node
	}
	return prov + " " + node + ":" + service
}

// provName is info's provider name, "" when it has none.
func provName(info *fi.Info) string {
	if info == nil || info.FabricAttr == nil {
		return ""
	}
	return info.FabricAttr.ProvName
}
