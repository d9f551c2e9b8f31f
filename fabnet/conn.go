package fabnet

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Conn is a connected (FI_EP_MSG) endpoint with its queues: what
// librdmacm's rdma_connect and rdma_accept leave an application with,
// and fabnet's net.Conn. Its Endpoint holds the objects and the blocking
// operations (Send, Recv, Read, Write and, with FI_TAGGED, TSend and
// TRecv, with fi.AddrUnspec for addresses); Close closes it all. A Conn
// is safe for concurrent use.
type Conn struct {
	*Endpoint
	peerData []byte
	remote   net.Addr
}

// PeerData returns the private data the peer sent: on the connecting
// side the data of its Accept (FI_CONNECTED's fi_eq_cm_entry data), on
// the accepting side that of its connection request (FI_CONNREQ's).
func (c *Conn) PeerData() []byte { return c.peerData }

// RemoteAddr returns the peer's address (fi_getpeer(3); net.Conn's
// RemoteAddr), nil when the provider does not report it.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// LocalAddr returns the endpoint's address (fi_getname(3); net.Conn's
// LocalAddr), nil when it has none.
func (e *Endpoint) LocalAddr() net.Addr {
	b, err := e.Name()
	if err != nil {
		return nil
	}
	return &Addr{Prov: provName(e.Info), Format: e.Info.AddrFormat, Raw: b}
}

// Addr is a fabric address, as net.Addr: its provider and its bytes in
// the provider's address format (fi_getinfo(3)'s addr_format and
// src_addr/dest_addr).
type Addr struct {
	// Prov is the provider's name ("tcp"), which Network returns.
	Prov   string
	Format fi.AddrFormat
	Raw    []byte
}

// Network returns the provider's name, the prov argument of Dial and
// Listen (net.Addr's Network).
func (a *Addr) Network() string { return a.Prov }

// String returns the address in the form Dial takes: "host:port" for the
// socket address formats, else fi_av_straddr(3)'s form ("fi_shm://...";
// fi.AddrString).
func (a *Addr) String() string {
	switch a.Format {
	case fi.FormatSockaddr, fi.FormatSockaddrIn, fi.FormatSockaddrIn6:
		if ap, _, err := fi.AddrPortFromSockaddr(a.Raw); err == nil {
			return ap.String()
		}
	}
	return fi.AddrString(a.Format, a.Raw)
}

// RejectedError is the error of a connection request that was refused
// (fi_reject(3) on the peer's side; an FI_ECONNREFUSED error event on
// ours; rdma_cm's RDMA_CM_EVENT_REJECTED), or that found nothing
// listening. Reason says which. It unwraps to fi.ECONNREFUSED, so
// errors.Is(err, fi.ECONNREFUSED) and errors.Is(err,
// syscall.ECONNREFUSED) hold, and eq.ReasonOf(err) is Reason.
type RejectedError struct {
	// Addr is the address that was dialed.
	Addr string
	// Data is the private data the peer passed to Reject (the error
	// event's err_data), empty when it gave none or when nothing answered
	// at the address (a refused transport connect).
	Data []byte
	// Reason is why the request was refused, the event's (eq.EQError's
	// Reason): eq.ReasonRejected when the peer's application rejected it
	// (with Data), eq.ReasonNoListener when nothing listens at the
	// address, eq.ReasonBacklogFull when the listener's backlog was full,
	// eq.ReasonUnknown when the provider cannot tell.
	Reason eq.ConnReason
	// Event is the error event itself, with the provider's errno.
	Event *eq.EQError
}

// Error says who refused, why, and how much data came with the refusal.
func (e *RejectedError) Error() string {
	s := fmt.Sprintf("fabnet: dial %s: connection refused", e.Addr)
	if e.Reason != eq.ReasonUnknown {
		s += " (" + e.Reason.String() + ")"
	}
	if len(e.Data) > 0 {
		s += fmt.Sprintf(", with %d bytes of reject data", len(e.Data))
	}
	return s
}

// Unwrap returns the event, which unwraps to fi.ECONNREFUSED (so that
// eq.ReasonOf and errors.As find it), or fi.ECONNREFUSED itself when
// there is no such event.
func (e *RejectedError) Unwrap() error {
	if e.Event != nil && e.Event.Err == fi.ECONNREFUSED {
		return e.Event
	}
	return fi.ECONNREFUSED
}

// Dialer connects to a listening peer (fi_connect(3); librdmacm's
// rdma_create_ep followed by rdma_connect; net.Dialer). The zero Dialer
// is ready to use.
type Dialer struct {
	// Hints are fi_getinfo(3)'s hints; the endpoint type is always
	// FI_EP_MSG, and prov, when not empty, replaces the provider name.
	// Nil asks for FI_MSG and FI_RMA, or FI_MSG alone where the provider
	// has no RMA.
	Hints *fi.Info
	// Data is the private data sent with the connection request, which
	// the peer sees in its Request (at most the provider's CM data size,
	// fi.EINVAL beyond).
	Data []byte
	// Config tunes the objects opened; nil takes the defaults.
	Config *EndpointConfig
}

// Dial connects to addr with the zero Dialer: see Dialer.Dial.
func Dial(ctx context.Context, prov, addr string) (*Conn, error) {
	var d Dialer
	return d.Dial(ctx, prov, addr)
}

// Dial connects to the listener at addr over provider prov ("" for any)
// and waits until the connection is up (fi_getinfo, fi_fabric,
// fi_domain, fi_eq_open, fi_cq_open, fi_endpoint, fi_ep_bind, fi_enable,
// fi_connect, then fi_eq_sread until FI_CONNECTED; net.Dialer's
// DialContext). addr is "host:port" (what a Listener's Addr().String()
// gives) or an fi_getinfo address string ("fi_sockaddr_in://...").
// Entries are tried in fi_getinfo's order until one connects, as net
// tries a name's addresses.
//
// A peer that rejects gives a *RejectedError with the reject's data, and
// no further entry is tried. When ctx ends first the attempt is abandoned
// and its endpoint closed, and the error is fi.ContextError's (matching
// context.DeadlineExceeded and fi.ETIMEDOUT after a deadline). Other
// failures wrap the fi.Errno of the step that failed.
func (d *Dialer) Dial(ctx context.Context, prov, addr string) (*Conn, error) {
	infos, err := getInfo(ctx, d.Hints, prov, addr, 0, fi.EPTypeMsg)
	if err != nil {
		return nil, errors.Wrapf(err, "fabnet: dial %s %s", prov, addr)
	}
	var first error
	for _, info := range infos {
		c, err := d.dialInfo(ctx, info, addr)
		if err == nil {
			return c, nil
		}
		var rej *RejectedError
		if errors.As(err, &rej) || ctx.Err() != nil {
			return nil, err
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// dialInfo connects from an endpoint opened from info.
func (d *Dialer) dialInfo(ctx context.Context, info *fi.Info, addr string) (*Conn, error) {
	e, err := openEndpoint(info, d.Config)
	if err != nil {
		return nil, errors.Wrapf(err, "fabnet: dial %s", addr)
	}
	c, err := e.connect(ctx, info.DestAddr, d.Data, addr)
	if err != nil {
		_ = e.Close()
		return nil, err
	}
	return c, nil
}

// connect connects e to dest with data and waits for FI_CONNECTED.
func (e *Endpoint) connect(ctx context.Context, dest, data []byte, addr string) (*Conn, error) {
	fail := func(err error, step string) error {
		return errors.Wrapf(err, "fabnet: dial %s: %s", addr, step)
	}
	if err := ep.CheckCMData(data, e.cm.CMDataSize()); err != nil {
		return nil, fail(err, "private data")
	}
	if err := e.cm.Connect(dest, data); err != nil {
		return nil, fail(err, "connect")
	}
	ev, err := e.awaitConnected(ctx)
	if err != nil {
		var ee *eq.EQError
		if errors.As(err, &ee) && ee.Err == fi.ECONNREFUSED {
			return nil, &RejectedError{Addr: addr, Data: ee.ErrData, Reason: ee.Reason, Event: ee}
		}
		return nil, fail(err, "connect")
	}
	return e.conn(ev.Data), nil
}

// awaitConnected waits on e's event queue for its FI_CONNECTED event
// (fi_eq_sread). An error event comes back as the *eq.EQError; an
// FI_SHUTDOWN before it as fi.ECONNABORTED.
func (e *Endpoint) awaitConnected(ctx context.Context) (*eq.Connected, error) {
	for {
		ev, err := e.EQ.SRead(ctx)
		switch {
		case err == nil:
			switch ev := ev.(type) {
			case *eq.Connected:
				return ev, nil
			case *eq.Shutdown:
				return nil, errors.Wrap(fi.ECONNABORTED, "the connection ended before it was established")
			}
		case fi.Code(err) == fi.EAVAIL:
			ee, err := e.EQ.ReadErr()
			if err == nil {
				return nil, ee
			}
			if fi.Code(err) != fi.EAGAIN {
				return nil, err
			}
		case ctx.Err() != nil:
			return nil, fi.ContextError(ctx)
		default:
			return nil, err
		}
	}
}

// conn makes the Conn of a connected e.
func (e *Endpoint) conn(peerData []byte) *Conn {
	c := &Conn{Endpoint: e, peerData: peerData}
	if b, err := peerOf(e.cm); err == nil {
		c.remote = &Addr{Prov: provName(e.Info), Format: e.Info.AddrFormat, Raw: b}
	}
	return c
}

// peerOf reads cm's whole peer address (fi_getpeer).
func peerOf(cm ep.CM) ([]byte, error) {
	buf := make([]byte, 128)
	k, err := cm.Peer(buf)
	if fi.Code(err) == fi.ETOOSMALL && k > len(buf) {
		buf = make([]byte, k)
		k, err = cm.Peer(buf)
	}
	if err != nil {
		return nil, err
	}
	return buf[:k], nil
}

// getInfo asks fi_getinfo(3) for entries of type typ at addr. With
// user hints nil it asks for FI_MSG and FI_RMA, then FI_MSG alone.
func getInfo(ctx context.Context, user *fi.Info, prov, addr string, flags fi.Flags, typ fi.EPType) ([]*fi.Info, error) {
	node, service, format, raw, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	if service == "0" && flags&fi.FlagSource != 0 {
		service = "" // any port: the provider picks one
	}
	capsList := []fi.Caps{fi.CapMsg | fi.CapRMA, fi.CapMsg}
	if user != nil {
		capsList = capsList[:1]
	}
	var first error
	for _, caps := range capsList {
		h := prepHints(user, prov, typ, caps)
		h.EPAttr.Type = typ
		if raw != nil {
			h.AddrFormat = format
			if flags&fi.FlagSource != 0 {
				h.SrcAddr = raw
			} else {
				h.DestAddr = raw
			}
		}
		infos, err := fi.GetInfo(ctx, node, service, flags, h)
		if err == nil {
			return infos, nil
		}
		if first == nil {
			first = err
		}
		if fi.Code(err) != fi.ENODATA {
			break
		}
	}
	return nil, first
}

// splitAddr parses Dial's and Listen's address: "host:port" (a missing
// port is empty), or an FI_ADDR_STR URI ("fi_sockaddr_in://...", which
// comes back as format and raw bytes).
func splitAddr(addr string) (node, service string, format fi.AddrFormat, raw []byte, err error) {
	if strings.Contains(addr, "://") {
		format, raw, err = fi.ParseAddr(addr)
		if err != nil {
			return "", "", 0, nil, err
		}
		return "", "", format, raw, nil
	}
	if addr == "" {
		return "", "", 0, nil, nil
	}
	if _, err := netip.ParseAddr(addr); err == nil || !strings.Contains(addr, ":") {
		return addr, "", 0, nil, nil // a host without a port
	}
	node, service, err = net.SplitHostPort(addr)
	if err != nil {
		return "", "", 0, nil, errors.Wrapf(fi.EINVAL, "fabnet: address %q: %v", addr, err)
	}
	return node, service, 0, nil, nil
}
