package ft

import (
	"context"
	"fmt"
	"io"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
)

// cm_data (functional/cm_data.c): private data on connection management
// (FI_EP_MSG). For each size 1, 2, 4... up to the provider's CM data size
// (FI_OPT_CM_DATA_SIZE) the client connects with that many bytes of the
// -v pattern, which the server checks and rejects with the pattern back,
// which the client checks in its FI_ECONNREFUSED event; the client
// connects again from a new endpoint, the server accepts with the pattern,
// the client checks it in FI_CONNECTED, and both shut the connection down
// and wait for their FI_SHUTDOWN. The two sides meet after each size over
// a TCP socket of their own (port 2710, -q), with a 4-byte 0 each way
// (ft_sock_sync). Last, the client checks that one byte more than the
// limit makes fi_connect fail with FI_EINVAL.
//
// -E and -b do not work with cm_data, C's or ft's: the server accepts
// the out-of-band socket before it listens, and the client never opens
// it (the client then finds no sync socket and fails with ECONNREFUSED).
func init() {
	register(&program{
		name:      "cm_data",
		desc:      "Private data on connect, accept and reject between MSG endpoints.",
		optstring: "q:h" + optsAddr + optsInfo,
		usage: functionalUsage(false, func(w io.Writer) {
			opt(w, "-q <service_port>", "TCP port of the sides' own sync socket (2710)")
		}),
		init: func(s *Session) {
			s.opts.Flags |= OptSize | OptSkipRegMR | OptSkipMsgAlloc
			s.local = &cmDataOpts{port: defaultCMDataPort}
		},
		parse: func(s *Session, o getopt.Option) (bool, error) {
			if o.Short != 'q' {
				return false, nil
			}
			s.local.(*cmDataOpts).port = o.Arg
			return true, nil
		},
		setup: func(s *Session) error {
			s.hints.EPAttr.Type = fi.EPTypeMsg
			s.hints.Caps = fi.CapMsg
			s.hints.DomainAttr.MRMode = s.opts.MRMode
			return nil
		},
		run: func(s *Session) error {
			return s.cmData(s.local.(*cmDataOpts).port)
		},
	})
}

// defaultCMDataPort is fi_cm_data's sync port (sock_service).
const defaultCMDataPort = "2710"

// cmDataOpts are cm_data's own options.
type cmDataOpts struct {
	port string // -q: the sync socket's port
}

// cmData is cm_data's run().
func (s *Session) cmData(port string) error {
	var size int
	var err error
	if s.opts.IsClient() {
		size, err = s.cmDataClientSetup()
	} else {
		size, err = s.cmDataServerSetup()
	}
	if err != nil {
		return err
	}
	if size <= 0 {
		return errors.Wrapf(fi.EINVAL, "fi_getopt FI_OPT_CM_DATA_SIZE: %s carries no private data", s.hints.FabricAttr.ProvName)
	}

	// The sync socket: the server listens on (-s, port) once its passive
	// endpoint listens, the client connects once.
	var sock *oobSock
	if s.opts.IsClient() {
		c, err := dialSock(s.ctx, s.opts.DstAddr, port, defaultLimit)
		if err != nil {
			return err
		}
		sock = &oobSock{conn: c, limit: s.limit}
	} else {
		l, err := listenSock(s.opts.SrcAddr, port)
		if err != nil {
			return err
		}
		c, err := acceptSock(s.ctx, l)
		l.Close()
		if err != nil {
			return err
		}
		s.contact = true
		sock = &oobSock{conn: c, limit: s.limit}
	}
	defer sock.close()

	for n := 1; n <= size; n <<= 1 {
		fmt.Fprintf(s.stdout, "trying with data size: %d\n", n)
		if s.opts.IsClient() {
			err = s.cmDataClient(n)
		} else {
			err = s.cmDataServer(n)
		}
		if err != nil {
			return errors.Wrapf(err, "private data of %d bytes", n)
		}
		v, err := s.sockSync(sock, 0)
		if err != nil {
			return err
		}
		if v != 0 {
			return errors.Wrapf(fi.EOTHER, "ft_sock_sync: the peer sent %d, not 0 (it failed)", v)
		}
	}
	if !s.opts.IsClient() {
		return nil
	}
	// One byte over the limit: the provider must refuse it (C passes the
	// server nothing for this; it has closed its socket).
	fmt.Fprintf(s.stdout, "trying with data size exceeding maximum: %d\n", size+1)
	err = s.cm.Connect(s.info.DestAddr, patternOf(size+1))
	switch {
	case fi.Code(err) == fi.EINVAL:
		return nil
	case err == nil:
		return errors.Wrapf(fi.EOTHER, "fi_connect with %d bytes of private data succeeded; the limit is %d and it must fail with FI_EINVAL", size+1, size)
	}
	return errors.Wrapf(err, "fi_connect with %d bytes of private data: expected FI_EINVAL", size+1)
}

// cmDataServerSetup listens and returns the passive endpoint's CM data
// size (server_setup).
func (s *Session) cmDataServerSetup() (int, error) {
	if err := s.startServer(); err != nil {
		return 0, err
	}
	c, ok := s.pep.(interface{ CMDataSize() int })
	if !ok {
		return 0, errors.Wrapf(fi.ENOSYS, "fi_getopt FI_OPT_CM_DATA_SIZE: %s's passive endpoints do not tell their CM data size", s.pepInfo.FabricAttr.ProvName)
	}
	return c.CMDataSize(), nil
}

// cmDataClientSetup opens the client's endpoint and returns its CM data
// size (client_setup): fi_getinfo of the server's address itself, not
// ft_getinfo.
func (s *Session) cmDataClientSetup() (int, error) {
	s.contact = true
	if _, _, _, err := s.readAddrOpts(s.hints); err != nil {
		return 0, err
	}
	infos, err := fi.GetInfo(s.ctx, s.opts.DstAddr, s.opts.DstPort, 0, s.hints)
	if err != nil {
		return 0, callErr("fi_getinfo", err)
	}
	s.setInfo(infos[0])
	if err := s.openFabricRes(); err != nil {
		return 0, err
	}
	if err := s.allocActiveRes(); err != nil {
		return 0, err
	}
	if err := s.enableEPRecv(); err != nil {
		return 0, err
	}
	return s.cmDataSize()
}

// cmDataSize is fi_getopt(FI_OPT_CM_DATA_SIZE) of the endpoint.
func (s *Session) cmDataSize() (int, error) {
	if s.cm == nil {
		return 0, errors.Wrapf(fi.ENOSYS, "fi_getopt FI_OPT_CM_DATA_SIZE: %s's endpoint has no connection management", s.info.FabricAttr.ProvName)
	}
	return s.cm.CMDataSize(), nil
}

// cmDataServer rejects one request and accepts the next, each carrying n
// bytes of the pattern, and closes the accepted endpoint after the
// shutdown (server).
func (s *Session) cmDataServer(n int) error {
	req, err := s.cmDataListen(n)
	if err != nil {
		return err
	}
	if err := s.pep.Reject(req.Info.Handle, patternOf(n)); err != nil {
		return callErr("fi_reject", err)
	}
	req, err = s.cmDataListen(n)
	if err != nil {
		return err
	}
	if err := s.cmDataAccept(req, n); err != nil {
		// As C, reject the request, whatever step failed.
		_ = s.pep.Reject(req.Info.Handle, nil)
		return err
	}
	return s.cmDataCloseActive()
}

// cmDataListen waits for a connection request, which must carry n bytes
// of the pattern (server_listen).
func (s *Session) cmDataListen(n int) (*eq.ConnReq, error) {
	ev, err := s.waitEvent(eq.EventConnReq, "listen", s.limit())
	if err != nil {
		return nil, err
	}
	s.contact = true
	req := ev.(*eq.ConnReq)
	if len(req.Data) != n {
		_ = s.pep.Reject(req.Info.Handle, nil)
		return nil, errors.Wrapf(fi.EINVAL, "fi_eq_sread listen: the connection request carries %d bytes of private data where the test sends %d", len(req.Data), n)
	}
	if err := s.checkBuf(req.Data); err != nil {
		_ = s.pep.Reject(req.Info.Handle, nil)
		return nil, err
	}
	return req, nil
}

// cmDataAccept opens an endpoint for req and accepts it with n bytes of
// the pattern, then shuts the connection down (server_accept).
func (s *Session) cmDataAccept(req *eq.ConnReq, n int) error {
	s.setInfo(req.Info)
	if err := s.openDomainRes(); err != nil {
		return err
	}
	if err := s.allocActiveRes(); err != nil {
		return err
	}
	if err := s.enableEPRecv(); err != nil {
		return err
	}
	if s.cm == nil {
		return errors.Wrapf(fi.ENOSYS, "fi_accept: %s's endpoint has no connection management", s.info.FabricAttr.ProvName)
	}
	if err := s.cm.Accept(patternOf(n)); err != nil {
		return callErr("fi_accept", err)
	}
	if err := s.completeConnect(); err != nil {
		return err
	}
	_ = s.cm.Shutdown(0)
	return s.readShutdown()
}

// readShutdown waits for the endpoint's FI_SHUTDOWN (read_shutdown_event).
func (s *Session) readShutdown() error {
	ev, err := s.waitEvent(eq.EventShutdown, "shutdown", s.limit())
	if err != nil {
		return err
	}
	if sd := ev.(*eq.Shutdown); sd.Fid != fi.Fid(s.ep) {
		return errors.Wrapf(fi.EOTHER, "Unexpected CM event FI_SHUTDOWN for %v, not this endpoint", sd.Fid)
	}
	return nil
}

// cmDataCloseActive closes the accepted endpoint and what was opened for
// it, down to the domain, keeping the passive endpoint.
func (s *Session) cmDataCloseActive() error {
	var first error
	if s.rxcq == s.txcq {
		s.rxcq = nil
	}
	for _, f := range []fi.Fid{s.ep, s.rxcq, s.txcq, s.rxcntr, s.txcntr, s.av, s.mr, s.domain} {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	s.ep, s.rxcq, s.txcq, s.rxcntr, s.txcntr, s.av, s.mr, s.domain = nil, nil, nil, nil, nil, nil, nil, nil
	s.msg, s.tagged, s.cm, s.mrDesc, s.info = nil, nil, nil, nil, nil
	s.buf, s.rxBuf, s.txBuf = nil, nil, nil
	return first
}

// cmDataClient connects with n bytes and expects the reject and its data,
// then connects from a new endpoint and expects the accept and its data,
// shuts down, and opens the endpoint the next size uses (client).
func (s *Session) cmDataClient(n int) error {
	if err := s.cm.Connect(s.info.DestAddr, patternOf(n)); err != nil {
		return callErr("fi_connect", err)
	}
	if err := s.cmDataExpectReject(n); err != nil {
		return err
	}
	if err := s.cmDataNewEP(); err != nil {
		return err
	}
	if err := s.cm.Connect(s.info.DestAddr, patternOf(n)); err != nil {
		return callErr("fi_connect", err)
	}
	ev, err := s.waitEvent(eq.EventConnected, "connect", s.limit())
	if err != nil {
		return err
	}
	c := ev.(*eq.Connected)
	if c.Fid != fi.Fid(s.ep) {
		return errors.Wrapf(fi.EOTHER, "Unexpected CM event FI_CONNECTED for %v, not this endpoint", c.Fid)
	}
	if len(c.Data) != n {
		return errors.Wrapf(fi.EINVAL, "fi_eq_sread connect: FI_CONNECTED carries %d bytes of private data where the server sends %d", len(c.Data), n)
	}
	if err := s.checkBuf(c.Data); err != nil {
		return err
	}
	_ = s.cm.Shutdown(0)
	if err := s.readShutdown(); err != nil {
		return err
	}
	return s.cmDataNewEP()
}

// cmDataExpectReject waits for the connection's refusal, whose data must
// be n bytes of the pattern (client_expect_reject). C checks whatever
// length arrives; ft wants the n bytes the server sends.
func (s *Session) cmDataExpectReject(n int) error {
	ctx, cancel := context.WithTimeout(s.ctx, defaultLimit)
	defer cancel()
	ev, err := s.eq.SRead(ctx)
	if err == nil {
		return errors.Wrapf(fi.EOTHER, "fi_eq_sread connect: %v where the server rejects the connection", ev.Type())
	}
	if !errors.Is(err, fi.EAVAIL) {
		return errors.Wrap(err, "fi_eq_sread connect: waiting for the reject")
	}
	e, err := s.eq.ReadErr()
	if err != nil {
		return callErr("fi_eq_readerr", err)
	}
	if e.Err != fi.ECONNREFUSED {
		return errors.Wrapf(e, "fi_eq_sread connect: eq_readerr %d (%v), provider errno: %d; the server rejects the connection", int(e.Err), e.Err, e.ProvErrno)
	}
	if len(e.ErrData) != n {
		return errors.Wrapf(fi.EINVAL, "the reject carries %d bytes of private data where the server sends %d", len(e.ErrData), n)
	}
	return s.checkBuf(e.ErrData)
}

// cmDataNewEP closes the client's endpoint and opens a new one on the
// same queues (client_open_new_ep): fi_connect may be called once in an
// endpoint's life.
func (s *Session) cmDataNewEP() error {
	if err := s.ep.Close(); err != nil {
		return callErr("fi_close", err)
	}
	s.ep, s.msg, s.tagged, s.cm = nil, nil, nil, nil
	e, err := ep.Open(s.domain, s.info)
	if err != nil {
		return callErr("fi_endpoint", err)
	}
	s.ep = e
	s.msg, _ = e.(ep.Msg)
	s.tagged, _ = e.(ep.Tagged)
	s.cm, _ = e.(ep.CM)
	if err := s.enableEPRecv(); err != nil {
		return err
	}
	_, err = s.cmDataSize()
	return err
}
