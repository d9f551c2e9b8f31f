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
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
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
// fi_listen, fi_reject) on kit.Passive, which binds its event queue,
// keeps its backlog and gives it its close rule. Its socket is bound when
// it opens (so Name gives the port before Listen), listens from Listen on,
// and each connection request read from an accepted socket becomes an
// eq.ConnReq event. Safe for concurrent use.
type passiveEP struct {
	kit.Passive[epSet]
	fabric *fabric
	log    func(msg string, args ...any)

	// Guarded by Passive.Mu.
	fd   int // the bound socket until Listen, then -1
	name []byte
	ln   *net.TCPListener
	hs   map[*net.TCPConn]time.Time // sockets whose request is being read, and when each was accepted

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
	p := &passiveEP{fabric: f, fd: -1, hs: make(map[*net.TCPConn]time.Time), hsDone: make(chan struct{}, 1)}
	p.log = func(msg string, args ...any) { fi.Logger(provName).Debug(msg, args...) }
	_ = p.SetBacklog(systemBacklog())
	if err := p.Init(&f.Fabric, info, p.bindTo); err != nil {
		return nil, err
	}
	return p, nil
}

// bindTo replaces the endpoint's socket by one bound to addr, a sockaddr.
// Called with Mu held or before the endpoint is shared.
func (p *passiveEP) bindTo(addr []byte) error {
	ap, _, err := fi.AddrPortFromSockaddr(addr)
	if err != nil {
		return errors.Wrap(err, "tcp: passive endpoint: address")
	}
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

// SetName rebinds the endpoint to addr (fi_setname) before Listen; port 0
// picks one as OpenPassive does.
func (p *passiveEP) SetName(addr []byte) error { return p.SetNameWith(addr, p.bindTo) }

// CMDataSize is the most private data a connection request to this
// passive endpoint, and its accept or reject, carry
// (fi_getopt(FI_OPT_CM_DATA_SIZE) on a passive endpoint): 256 bytes, as its endpoints.
func (p *passiveEP) CMDataSize() int { return cmMaxDataSize }

// Name copies the bound address into buf (fi_getname), with the
// ETOOSMALL rule of ep.Namer.
func (p *passiveEP) Name(buf []byte) (int, error) {
	return p.NameWith(buf, func() []byte { return p.name })
}

// Listen starts listening (fi_listen): it needs a bound event queue
// (fi.ENOEQ) and may be called once (fi.EOPBADSTATE after).
func (p *passiveEP) Listen() error { return p.ListenWith(p.listenLocked) }

// listenLocked hands the bound socket to a listener and starts accepting;
// Mu is held.
func (p *passiveEP) listenLocked() error {
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
		p.Mu.Lock()
		if p.ClosedLocked() {
			p.Mu.Unlock()
			c.Close()
			return
		}
		p.hs[c] = time.Now()
		p.wg.Add(1)
		p.Mu.Unlock()
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
		p.Mu.Lock()
		if p.ClosedLocked() || len(p.hs) < maxHandshakes {
			p.Mu.Unlock()
			return
		}
		victim, wait := p.silentLocked(time.Now(), grace)
		if victim != nil {
			delete(p.hs, victim)
		}
		p.Mu.Unlock()
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
// looking again; Mu is held.
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
		p.Mu.Lock()
		delete(p.hs, c)
		p.Mu.Unlock()
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
	info := p.RequestInfo(r, sockaddrOf(c.LocalAddr()), r.peer)
	data := append([]byte(nil), h.data...)
	// The request joins the backlog and leaves the sockets Close cuts in
	// one step, so that Close either cuts it here or rejects it properly.
	keep = true
	p.Mu.Lock()
	if _, ok := p.hs[c]; !ok && !p.ClosedLocked() {
		// makeRoom closed it, silent for a second, as its request
		// arrived: it is gone.
		p.Mu.Unlock()
		keep = false
		return
	}
	err = p.AddRequestLocked(r)
	delete(p.hs, c)
	p.Mu.Unlock()
	if err != nil {
		// The backlog is full (fi.ECONNREFUSED), or the endpoint closes:
		// the reject says which (§2.9), so that the requester can tell
		// either from its peer's application refusing.
		code := rejectClosing
		if errors.Is(err, fi.ECONNREFUSED) {
			code = rejectBacklogFull
		}
		p.log("tcp: refused a connection request", "peer", c.RemoteAddr(), "err", err)
		r.reject(nil, code)
		return
	}
	p.PostRequest(p, info, data)
}

// Reject rejects the request handle with private data (fi_reject): the
// requester gets an error event with fi.ECONNREFUSED, eq.ReasonRejected
// and data (a C requester: FI_ECONNREFUSED and the data). Data over
// 256 bytes is refused with fi.EINVAL; a handle that is not a pending
// request of this endpoint gives fi.EINVAL.
func (p *passiveEP) Reject(handle fi.Fid, data []byte) error {
	return p.RejectWith(handle, data, cmMaxDataSize, rejectReq)
}

// rejectReq refuses the request handle with data on behalf of the
// application (Reject, CloseRequest): a consumer reject.
func rejectReq(h fi.Fid, data []byte) { h.(*connReq).reject(data, rejectConsumer) }

// rejectClosed refuses a request still pending when the passive endpoint
// closes (EndClose): the requester learns that the listener went away.
func rejectClosed(h fi.Fid, data []byte) { h.(*connReq).reject(data, rejectClosing) }

// Close stops listening (fi_close): pending requests are rejected (with
// the code that tells the requester the listener closed, §2.9), sockets
// whose request was not read yet are closed, and the event queue and
// fabric are released. A second Close returns fi.EBADF.
func (p *passiveEP) Close() error {
	err := p.BeginClose(func() {
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
	})
	if err != nil {
		return err
	}
	p.wg.Wait()
	p.EndClose(rejectClosed)
	return nil
}
