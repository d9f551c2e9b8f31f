//go:build linux

package tcp

import (
	"os"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// The provider's environment variables (fi_param_define(3)); fi_info -e
// lists them. The first four mean what they mean to the C provider; the
// congestion control and the timeouts are gofabric's own (C 1.17 sets no
// TCP_USER_TIMEOUT or keepalive and has no such variables).
var (
	paramIface = fi.DefineParam(provName, "iface", fi.ParamString,
		"Name of the network interface to use, e.g. eth0 (default: every interface that is up)")
	paramPortLow = fi.DefineParam(provName, "port_low_range", fi.ParamInt,
		"Lowest local port of passive endpoints, with FI_TCP_PORT_HIGH_RANGE (default: an ephemeral port)")
	paramPortHigh = fi.DefineParam(provName, "port_high_range", fi.ParamInt,
		"Highest local port of passive endpoints, with FI_TCP_PORT_LOW_RANGE (default: an ephemeral port)")
	paramNodelay = fi.DefineParam(provName, "nodelay", fi.ParamBool,
		"Set TCP_NODELAY on the provider's sockets (default: yes)")
	paramCongestion = fi.DefineParam(provName, "congestion", fi.ParamString,
		"gofabric only: TCP congestion control of the provider's connections, one of net.ipv4.tcp_available_congestion_control, e.g. reno or cubic (default: the system's, net.ipv4.tcp_congestion_control)")
	paramConnTimeout = fi.DefineParam(provName, "conn_timeout", fi.ParamInt,
		"gofabric only: milliseconds a connection attempt may take, from the TCP connect to the peer's CM response, before it fails with FI_ETIMEDOUT; also bounds the wait for a request on an accepted socket, and how long tcp;ofi_rxm retries a refused connection (default: 30000)")
	paramUserTimeout = fi.DefineParam(provName, "user_timeout", fi.ParamInt,
		"gofabric only: milliseconds an established connection may go without the peer acknowledging data or answering keepalive probes before it fails (TCP_USER_TIMEOUT, with keepalive probes every third of it); 0 leaves the kernel's retransmission limits, about 15 minutes, and no keepalive (default: 30000)")
	paramStallTimeout = fi.DefineParam(provName, "stall_timeout", fi.ParamInt,
		"gofabric only: milliseconds a peer of a connection in dynamic receive mode (the connections of tcp;ofi_rxm) may go without delivering a byte of what it owes (read responses of a rendezvous, the rest of a message it stopped sending half way) before the connection is dropped and what it held fails with FI_ETIMEDOUT; 0 waits for ever (default: 30000)")
)

// params are the provider's settings, read from the environment by
// loadParams when GetInfo runs and when a fabric opens; a fabric keeps the
// values it opened with.
type params struct {
	// iface restricts the provider to one interface (FI_TCP_IFACE); empty
	// means every interface that is up.
	iface string
	// portLow and portHigh bound the ports passive endpoints bind to
	// (FI_TCP_PORT_LOW_RANGE, FI_TCP_PORT_HIGH_RANGE); both zero means an
	// ephemeral port.
	portLow, portHigh int
	// nodelay sets TCP_NODELAY on every socket (FI_TCP_NODELAY).
	nodelay bool
	// congestion is the TCP congestion control set on every connection
	// (FI_TCP_CONGESTION); empty leaves the system's.
	congestion string
	// connTimeout bounds a connection attempt and the wait for the
	// request on an accepted socket (FI_TCP_CONN_TIMEOUT).
	connTimeout time.Duration
	// userTimeout is the TCP_USER_TIMEOUT of established connections,
	// with keepalive probes (FI_TCP_USER_TIMEOUT); 0 leaves the kernel's.
	userTimeout time.Duration
	// stallTimeout bounds how long the peer of a connection in dynamic
	// receive mode may owe data without progress (FI_TCP_STALL_TIMEOUT);
	// 0 is no bound.
	stallTimeout time.Duration
}

// availableCongestion lists the congestion controls the kernel offers.
const availableCongestion = "/proc/sys/net/ipv4/tcp_available_congestion_control"

// congestionParam reads FI_TCP_CONGESTION: a name the kernel offers, when
// the kernel says which it offers.
func congestionParam() (string, error) {
	v, ok := paramCongestion.Lookup()
	if !ok || v == "" {
		return "", nil
	}
	b, err := os.ReadFile(availableCongestion)
	if err != nil {
		return v, nil // setsockopt will tell, per connection
	}
	avail := strings.Fields(string(b))
	for _, a := range avail {
		if a == v {
			return v, nil
		}
	}
	return "", errors.Wrapf(fi.EINVAL, "tcp: params: %s=%q is not a congestion control this kernel offers (%s)",
		paramCongestion.Name, v, strings.Join(avail, " "))
}

// defaultConnTimeoutMS is FI_TCP_CONN_TIMEOUT's default: a peer that
// never answers fails a connection attempt after 30 s.
const defaultConnTimeoutMS = 30000

// defaultUserTimeoutMS is FI_TCP_USER_TIMEOUT's default: a connection
// whose peer stops acknowledging (a cut link, a dead host) fails within
// 30 s rather than after the kernel's 15 minutes of retransmissions.
const defaultUserTimeoutMS = 30000

// defaultStallTimeoutMS is FI_TCP_STALL_TIMEOUT's default: a peer of a
// connection in dynamic receive mode owes data for at most 30 s without
// progress.
const defaultStallTimeoutMS = 30000

// maxMS is the largest millisecond value a time.Duration holds.
const maxMS = int(time.Duration(1<<63-1) / time.Millisecond)

// maxPort is the highest TCP port.
const maxPort = 65535

// loadParams reads the provider's environment variables. An unparsable or
// out-of-range value gives EINVAL with the variable's name in the message.
func loadParams() (params, error) {
	p := params{nodelay: true}
	var err error
	if v, ok := paramIface.Lookup(); ok {
		p.iface = v
	}
	if p.portLow, err = intParam(paramPortLow, 0, maxPort); err != nil {
		return params{}, err
	}
	if p.portHigh, err = intParam(paramPortHigh, 0, maxPort); err != nil {
		return params{}, err
	}
	switch {
	case (p.portLow == 0) != (p.portHigh == 0):
		return params{}, errors.Wrapf(fi.EINVAL,
			"tcp: params: %s=%d and %s=%d: set both bounds of the port range, or neither",
			paramPortLow.Name, p.portLow, paramPortHigh.Name, p.portHigh)
	case p.portLow > p.portHigh:
		return params{}, errors.Wrapf(fi.EINVAL, "tcp: params: %s=%d is above %s=%d",
			paramPortLow.Name, p.portLow, paramPortHigh.Name, p.portHigh)
	}
	if b, err := paramNodelay.Bool(); err == nil {
		p.nodelay = b
	} else if fi.Code(err) != fi.ENODATA {
		return params{}, errors.Wrap(err, "tcp: params")
	}
	if p.congestion, err = congestionParam(); err != nil {
		return params{}, err
	}
	ms, err := intParam(paramConnTimeout, 1, maxMS)
	if err != nil {
		return params{}, err
	}
	if ms == 0 {
		ms = defaultConnTimeoutMS
	}
	p.connTimeout = time.Duration(ms) * time.Millisecond
	if p.userTimeout, err = msParam(paramUserTimeout, defaultUserTimeoutMS); err != nil {
		return params{}, err
	}
	if p.stallTimeout, err = msParam(paramStallTimeout, defaultStallTimeoutMS); err != nil {
		return params{}, err
	}
	return p, nil
}

// msParam reads a parameter of milliseconds in [0, maxMS]; unset is def.
func msParam(p *fi.Param, def int) (time.Duration, error) {
	if _, ok := p.Lookup(); !ok {
		return time.Duration(def) * time.Millisecond, nil
	}
	ms, err := intParam(p, 0, maxMS)
	return time.Duration(ms) * time.Millisecond, err
}

// intParam reads an integer parameter in [lo, hi]; unset is 0.
func intParam(p *fi.Param, lo, hi int) (int, error) {
	n, err := p.Int()
	switch {
	case fi.Code(err) == fi.ENODATA:
		return 0, nil
	case err != nil:
		return 0, errors.Wrap(err, "tcp: params")
	case n < lo || n > hi:
		return 0, errors.Wrapf(fi.EINVAL, "tcp: params: %s=%d is outside [%d, %d]", p.Name, n, lo, hi)
	}
	return n, nil
}
