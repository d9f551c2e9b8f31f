//go:build linux

package tcp

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// A listener reads the requests of at most maxHandshakes accepted sockets
// at once, each on a goroutine bounded by FI_TCP_CONN_TIMEOUT. When that
// many are pending it closes the oldest one that has been silent for
// handshakeGrace (nothing to read: it sent nothing, or only part of a
// request, and the rest is not there), and while none qualifies it stops
// accepting, leaving new connections in the kernel's queue. So sockets
// that connect and send nothing cost at most maxHandshakes descriptors and
// goroutines, and a client behind them gets its turn: one does not wait
// for a request it already has, and a request arrives with (or right
// after) the TCP handshake, long before the grace is up.
const (
	maxHandshakes  = 256
	handshakeGrace = time.Second
)

// somaxconn is where the kernel keeps its limit on a listening socket's
// accept queue (net.core.somaxconn); listen(2) caps every backlog at it.
const somaxconn = "/proc/sys/net/core/somaxconn"

// systemBacklog returns the kernel's accept queue size, net.core.somaxconn
// (4096 by default since Linux 5.4), or unix.SOMAXCONN when it cannot be
// read. It is the listen(2) backlog of every passive endpoint, as the C
// provider passes 4096, and the default of the provider's own backlog of
// requests (ep.Backlog), so that the provider never refuses a request the
// kernel's queue took.
func systemBacklog() int {
	if b, err := os.ReadFile(somaxconn); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			return n
		}
	}
	return unix.SOMAXCONN
}

// passiveEP is a listening endpoint (struct fid_pep; fi_passive_ep,
// fi_listen, fi_reject). Its socket is bound when it opens (so Name gives
// the port before Listen), listens from Listen on, and each connection
// request read from an accepted socket becomes an eq.ConnReq event. Safe
// for concurrent use.
type passiveEP struct {
	fabric  *fabric
	info    *fi.Info
	backlog ep.Backlog
	log     func(msg string, args ...any)

	// onReq, when set, takes the connection requests instead of an event
	// queue: the listener of an RDM endpoint (rdm.go).
	onReq func(r *connReq, data []byte)

	mu     sync.Mutex // guards the fields below
	events *eventQueue
	fd     int // the bound socket until Listen, then -1
	name   []byte
	ln     *net.TCPListener
	hs     map[*net.TCPConn]time.Time // sockets whose request is being read, and when each was accepted
	closed bool

	// hsDone tells the accept loop that a socket left hs.
	hsDone chan struct{}

	wg sync.WaitGroup // the accept loop and the request readers
}

var (
	_ ep.PassiveEndpoint = (*passiveEP)(nil)
	_ ep.BacklogSetter   = (*passiveEP)(nil)
	_ ep.PassiveOpener   = (*fabric)(nil)
)

// OpenPassive opens a passive endpoint (fi_passive_ep) bound to info's
// source address, or to the wildcard address of info's format when it has
// none; the port is the source address's, else one of
// FI_TCP_PORT_LOW_RANGE..HIGH_RANGE, else an ephemeral one.
func (f *fabric) OpenPassive(info *fi.Info) (ep.PassiveEndpoint, error) {
	if info.EPAttr != nil && info.EPAttr.Type != fi.EPTypeUnspec && info.EPAttr.Type != fi.EPTypeMsg {
		return nil, errors.Wrapf(fi.EINVAL, "tcp: open passive endpoint: ep type %v not supported (offers FI_EP_MSG)", info.EPAttr.Type)
	}
	name := info.SrcAddr
	if name == nil {
		name = wildcard(info.AddrFormat)
	}
	ap, _, err := fi.AddrPortFromSockaddr(name)
	if err != nil {
		return nil, errors.Wrap(err, "tcp: open passive endpoint: source address")
	}
	if err := f.ref.Acquire(); err != nil {
		return nil, errors.Wrap(err, "tcp: open passive endpoint: fabric closed")
	}
	p := &passiveEP{fabric: f, info: info.Clone(), fd: -1, hs: make(map[*net.TCPConn]time.Time), hsDone: make(chan struct{}, 1)}
	p.log = func(msg string, args ...any) { fi.Logger(provName).Debug(msg, args...) }
	_ = p.backlog.SetBacklog(systemBacklog())
	if err := p.bindTo(ap); err != nil {
		f.ref.Release()
		return nil, err
	}
	return p, nil
}

// wildcard returns the wildcard sockaddr of format f (IPv4 unless f says
// IPv6).
func wildcard(f fi.AddrFormat) []byte {
	a := netip.IPv4Unspecified()
	if f == fi.FormatSockaddrIn6 {
		a = netip.IPv6Unspecified()
	}
	_, b, _ := fi.SockaddrFromAddrPort(netip.AddrPortFrom(a, 0))
	return b
}

// bindTo replaces the endpoint's socket by one bound to ap. Called with mu
// held or before the endpoint is shared.
func (p *passiveEP) bindTo(ap netip.AddrPort) error {
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	fam := unix.AF_INET
	if ap.Addr().Is6() {
		fam = unix.AF_INET6
	}
	fd, err := unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return errors.Wrapf(fi.Code(err), "tcp: passive endpoint: socket: %v", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(fd)
		return errors.Wrapf(fi.Code(err), "tcp: passive endpoint: SO_REUSEADDR: %v", err)
	}
	if err := p.bindPort(fd, ap); err != nil {
		unix.Close(fd)
		return err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return errors.Wrapf(fi.Code(err), "tcp: passive endpoint: getsockname: %v", err)
	}
	if p.fd >= 0 {
		unix.Close(p.fd)
	}
	p.fd, p.name = fd, sockaddrBytes(sa)
	return nil
}

// bindPort binds fd to ap; port 0 with a configured range tries the
// range from a random start, as the C provider does.
func (p *passiveEP) bindPort(fd int, ap netip.AddrPort) error {
	lo, hi := p.fabric.params.portLow, p.fabric.params.portHigh
	if ap.Port() != 0 || lo == 0 {
		if err := unix.Bind(fd, toUnixSockaddr(ap)); err != nil {
			return errors.Wrapf(fi.Code(err), "tcp: passive endpoint: bind %v: %v", ap, err)
		}
		return nil
	}
	n := hi - lo + 1
	start := rand.IntN(n)
	var last error
	for i := range n {
		port := uint16(lo + (start+i)%n)
		if last = unix.Bind(fd, toUnixSockaddr(netip.AddrPortFrom(ap.Addr(), port))); last == nil {
			return nil
		}
	}
	return errors.Wrapf(fi.Code(last), "tcp: passive endpoint: no free port in %s..%s (%d-%d): %v",
		paramPortLow.Name, paramPortHigh.Name, lo, hi, last)
}

func toUnixSockaddr(ap netip.AddrPort) unix.Sockaddr {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	if z := ap.Addr().Zone(); z != "" {
		if ifi, err := net.InterfaceByName(z); err == nil {
			sa.ZoneId = uint32(ifi.Index)
		}
	}
	return sa
}

func sockaddrBytes(sa unix.Sockaddr) []byte {
	var ap netip.AddrPort
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		ap = netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		addr := netip.AddrFrom16(a.Addr)
		if a.ZoneId != 0 {
			if ifi, err := net.InterfaceByIndex(int(a.ZoneId)); err == nil {
				addr = addr.WithZone(ifi.Name)
			}
		}
		ap = netip.AddrPortFrom(addr, uint16(a.Port))
	default:
		return nil
	}
	_, b, _ := fi.SockaddrFromAddrPort(ap)
	return b
}

// Info returns the Info the passive endpoint was opened with.
func (p *passiveEP) Info() *fi.Info { return p.info }

// Bind binds the event queue that gets the connection requests
// (fi_pep_bind); flags must be 0 and the queue this provider's.
func (p *passiveEP) Bind(q eq.EventQueue, flags fi.Flags) error {
	if flags != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "tcp: passive endpoint: bind: flags %v", flags)
	}
	eqq, ok := q.(*eventQueue)
	if !ok {
		return errors.Wrapf(fi.EINVAL, "tcp: passive endpoint: bind: %T is not a tcp event queue", q)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return errors.Wrap(fi.EBADF, "tcp: passive endpoint: bind: closed")
	case p.events != nil:
		return errors.Wrap(fi.EINVAL, "tcp: passive endpoint: bind: an event queue is already bound")
	}
	if err := eqq.Acquire(); err != nil {
		return errors.Wrap(err, "tcp: passive endpoint: bind")
	}
	p.events = eqq
	return nil
}

// SetBacklog sets how many requests may wait for Accept or Reject
// (fi_control FI_BACKLOG); more are rejected without data. The default is
// the kernel's accept queue size, net.core.somaxconn.
func (p *passiveEP) SetBacklog(n int) error { return p.backlog.SetBacklog(n) }

// SetName rebinds the endpoint to addr (fi_setname) before Listen; port 0
// picks one as OpenPassive does.
func (p *passiveEP) SetName(addr []byte) error {
	ap, _, err := fi.AddrPortFromSockaddr(addr)
	if err != nil {
		return errors.Wrap(err, "tcp: passive endpoint: setname")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return errors.Wrap(fi.EBADF, "tcp: passive endpoint: setname: closed")
	case p.ln != nil:
		return errors.Wrap(fi.EOPBADSTATE, "tcp: passive endpoint: setname: already listening")
	}
	return p.bindTo(ap)
}

// CMDataSize is the most private data a connection request to this
// passive endpoint, and its accept or reject, carry
// (fi_getopt(FI_OPT_CM_DATA_SIZE) on a passive endpoint): 256 bytes, as its endpoints.
func (p *passiveEP) CMDataSize() int { return cmMaxDataSize }

// Name copies the bound address into buf (fi_getname), with the
// ETOOSMALL rule of ep.Namer.
func (p *passiveEP) Name(buf []byte) (int, error) {
	p.mu.Lock()
	name, closed := p.name, p.closed
	p.mu.Unlock()
	if closed {
		return 0, errors.Wrap(fi.EBADF, "tcp: passive endpoint: getname: closed")
	}
	return copyName(buf, name)
}

// Listen starts listening (fi_listen): it needs a bound event queue
// (fi.ENOEQ) and may be called once (fi.EOPBADSTATE after).
func (p *passiveEP) Listen() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.Wrap(fi.EBADF, "tcp: listen: closed")
	}
	if p.events == nil && p.onReq == nil {
		return errors.Wrap(fi.ENOEQ, "tcp: listen: no event queue bound")
	}
	if err := p.backlog.Listen(); err != nil {
		return errors.Wrap(err, "tcp: listen")
	}
	if err := unix.Listen(p.fd, systemBacklog()); err != nil {
		return errors.Wrapf(fi.Code(err), "tcp: listen: %v", err)
	}
	f := os.NewFile(uintptr(p.fd), "tcp-pep")
	l, err := net.FileListener(f) // dups the descriptor
	f.Close()
	p.fd = -1
	if err != nil {
		return errors.Wrapf(fi.EIO, "tcp: listen: %v", err)
	}
	p.ln = l.(*net.TCPListener)
	p.wg.Add(1)
	go p.acceptLoop(p.ln)
	return nil
}

// acceptLoop accepts sockets until the listener closes; each gets a
// goroutine that reads its request.
func (p *passiveEP) acceptLoop(ln *net.TCPListener) {
	defer p.wg.Done()
	for {
		c, err := ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			p.log("tcp: accept failed", "err", err)
			time.Sleep(10 * time.Millisecond) // EMFILE and the like: do not spin
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.hs[c] = time.Now()
		p.wg.Add(1)
		p.mu.Unlock()
		go p.readRequest(c)
		p.makeRoom()
	}
}

// makeRoom returns once fewer than maxHandshakes accepted sockets wait
// for their request (or the endpoint closed), closing the oldest silent
// ones (see maxHandshakes).
func (p *passiveEP) makeRoom() {
	grace := min(handshakeGrace, p.fabric.params.connTimeout)
	for {
		p.mu.Lock()
		if p.closed || len(p.hs) < maxHandshakes {
			p.mu.Unlock()
			return
		}
		victim, wait := p.silentLocked(time.Now(), grace)
		if victim != nil {
			delete(p.hs, victim)
		}
		p.mu.Unlock()
		if victim != nil {
			p.log("tcp: closed a connection that sent no request, to make room", "peer", victim.RemoteAddr())
			victim.Close() // its reader ends
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-p.hsDone:
		case <-t.C:
		}
		t.Stop()
	}
}

// silentLocked returns the oldest socket of hs accepted at least grace
// before now that has nothing to read, or else how long to wait before
// looking again; mu is held.
func (p *passiveEP) silentLocked(now time.Time, grace time.Duration) (*net.TCPConn, time.Duration) {
	wait := grace
	var old []*net.TCPConn
	for c, at := range p.hs {
		if age := now.Sub(at); age < grace {
			wait = min(wait, grace-age)
		} else {
			old = append(old, c)
		}
	}
	slices.SortFunc(old, func(a, b *net.TCPConn) int { return p.hs[a].Compare(p.hs[b]) })
	for _, c := range old {
		if !readable(c) {
			return c, 0
		}
	}
	if len(old) > 0 {
		// Every old one has its request in hand: its reader finishes
		// soon (hsDone).
		wait = min(wait, 10*time.Millisecond)
	}
	return nil, wait
}

// readable reports whether c has bytes (or an error, or its end) to read.
func readable(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return true
	}
	r := true
	if err := rc.Control(func(fd uintptr) { r = ready(int(fd), unix.POLLIN) }); err != nil {
		return true
	}
	return r
}

// readRequest reads the CM request from an accepted socket, within the
// connect timeout, and reports it. A socket that sends anything else, or
// nothing in time, is closed without an event: it never was a request.
func (p *passiveEP) readRequest(c *net.TCPConn) {
	defer p.wg.Done()
	keep := false
	defer func() {
		p.mu.Lock()
		delete(p.hs, c)
		p.mu.Unlock()
		select {
		case p.hsDone <- struct{}{}:
		default:
		}
		if !keep {
			c.Close()
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(p.fabric.params.connTimeout))
	var buf [cmMaxMsgSize]byte
	h, err := readCM(c, &buf)
	if err == nil && h.typ != cmConnReq {
		err = errors.Wrapf(fi.EIO, "tcp: cm: got message type %d, want a connect request", h.typ)
	}
	if err == nil {
		err = c.SetReadDeadline(time.Time{})
	}
	if err != nil {
		p.log("tcp: dropped a connection without a valid request", "peer", c.RemoteAddr(), "err", err)
		return
	}
	r := &connReq{pep: p, conn: c, peer: sockaddrOf(c.RemoteAddr()), bigEndian: h.bigEndian}
	info := p.info.Clone()
	info.Handle = r
	info.DestAddr = r.peer
	info.SrcAddr = sockaddrOf(c.LocalAddr())
	if len(info.SrcAddr) > 16 {
		info.AddrFormat = fi.FormatSockaddrIn6
	} else {
		info.AddrFormat = fi.FormatSockaddrIn
	}
	data := append([]byte(nil), h.data...)
	// The request joins the backlog and leaves the sockets Close cuts in
	// one step, so that Close either cuts it here or rejects it properly.
	keep = true
	p.mu.Lock()
	if _, ok := p.hs[c]; !ok && !p.closed {
		// makeRoom closed it, silent for a second, as its request
		// arrived: it is gone.
		p.mu.Unlock()
		keep = false
		return
	}
	err = errors.Wrap(fi.EBADF, "tcp: passive endpoint closed")
	if !p.closed {
		err = p.backlog.Add(r)
	}
	delete(p.hs, c)
	q := p.events
	p.mu.Unlock()
	if err != nil {
		p.log("tcp: refused a connection request", "peer", c.RemoteAddr(), "err", err)
		r.reject(nil)
		return
	}
	if p.onReq != nil {
		p.onReq(r, data)
		return
	}
	_ = q.Post(&eq.ConnReq{Fid: p, Info: info, Data: data})
}

// Reject rejects the request handle with private data (fi_reject): the
// requester gets an error event with fi.ECONNREFUSED and data. Data over
// 256 bytes is refused with fi.EINVAL; a handle that is not a pending
// request of this endpoint gives fi.EINVAL.
func (p *passiveEP) Reject(handle fi.Fid, data []byte) error {
	if err := ep.CheckCMData(data, cmMaxDataSize); err != nil {
		return errors.Wrap(err, "tcp: reject")
	}
	r, ok := handle.(*connReq)
	if !ok || r.pep != p {
		return errors.Wrapf(fi.EINVAL, "tcp: reject: %T is not a request of this passive endpoint", handle)
	}
	if err := p.backlog.Take(r); err != nil {
		return errors.Wrap(err, "tcp: reject")
	}
	r.reject(data)
	return nil
}

// Close stops listening (fi_close): pending requests are rejected, sockets
// whose request was not read yet are closed, and the event queue and
// fabric are released. A second Close returns fi.EBADF.
func (p *passiveEP) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errors.Wrap(fi.EBADF, "tcp: close passive endpoint: already closed")
	}
	p.closed = true
	if p.ln != nil {
		p.ln.Close()
	}
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
	for c := range p.hs {
		c.Close()
	}
	q := p.events
	p.mu.Unlock()
	p.wg.Wait()
	pending, _ := p.backlog.Close()
	for _, h := range pending {
		h.(*connReq).reject(nil)
	}
	if q != nil {
		q.Release()
	}
	p.fabric.ref.Release()
	return nil
}
