package ft

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// readAddrOpts picks fi_getinfo's node, service and flags from the address
// options (ft_read_addr_opts). A client that has a source address, or no
// out-of-band socket, asks for the server's address (-P, default 9228)
// with its source (-s, -B) in the hints; a server, or a client whose
// peer's address comes over the socket, asks for its own (FI_SOURCE, -B
// default 9228).
func (s *Session) readAddrOpts(hints *fi.Info) (node, service string, flags fi.Flags, err error) {
	o := &s.opts
	if o.IsClient() && (o.SrcAddr != "" || o.OOBPort == "") {
		if o.DstPort == "" {
			o.DstPort = defaultPort
		}
		if err := s.getSrcAddr(o.SrcAddr, o.SrcPort, hints); err != nil {
			return "", "", 0, err
		}
		return o.DstAddr, o.DstPort, 0, nil
	}
	if o.SrcPort == "" {
		o.SrcPort = defaultPort
	}
	return o.SrcAddr, o.SrcPort, fi.FlagSource, nil
}

// getSrcAddr resolves node and service as a source address into hints'
// SrcAddr and AddrFormat (ft_getsrcaddr); with neither it clears SrcAddr.
func (s *Session) getSrcAddr(node, service string, hints *fi.Info) error {
	if node == "" && service == "" {
		hints.SrcAddr = nil
		return nil
	}
	infos, err := fi.GetInfo(s.ctx, node, service, fi.FlagSource, hints)
	if err != nil {
		return callErr("fi_getinfo", err)
	}
	hints.AddrFormat = infos[0].AddrFormat
	hints.SrcAddr = infos[0].SrcAddr
	return nil
}

// getinfo is ft_getinfo: fi_getinfo with the address options, FI_EP_RDM
// when the hints name no endpoint type, FI_HMEM with -H, and -k's check
// that the provider kept FI_MSG_PREFIX.
func (s *Session) getinfo(hints *fi.Info) (*fi.Info, error) {
	node, service, flags, err := s.readAddrOpts(hints)
	if err != nil {
		return nil, err
	}
	if hints.EPAttr.Type == fi.EPTypeUnspec {
		hints.EPAttr.Type = fi.EPTypeRDM
	}
	if s.opts.Has(OptEnableHMEM) {
		hints.Caps |= fi.CapHMEM
		hints.DomainAttr.MRMode |= fi.MRModeHMEM
	}
	infos, err := fi.GetInfo(s.ctx, node, service, flags, hints)
	if err != nil {
		return nil, callErr("fi_getinfo", err)
	}
	info := infos[0]
	if s.opts.ForcePrefix && (info.TxAttr == nil || info.RxAttr == nil ||
		info.TxAttr.Mode&fi.ModeMsgPrefix == 0 || info.RxAttr.Mode&fi.ModeMsgPrefix == 0) {
		return nil, errors.Wrapf(fi.ENODATA, "Provider disabled requested prefix mode (-k): %s gives no FI_MSG_PREFIX", info.FabricAttr.ProvName)
	}
	return info, nil
}

// setInfo makes info the endpoint's Info and reads its prefix sizes.
func (s *Session) setInfo(info *fi.Info) {
	s.info = info
	s.txPrefix, s.rxPrefix = 0, 0
	if info.EPAttr != nil {
		if info.TxAttr != nil && info.TxAttr.Mode&fi.ModeMsgPrefix != 0 {
			s.txPrefix = info.EPAttr.MsgPrefixSize
		}
		if info.RxAttr != nil && info.RxAttr.Mode&fi.ModeMsgPrefix != 0 {
			s.rxPrefix = info.EPAttr.MsgPrefixSize
		}
	}
}

// openFabric opens the fabric and its event queue (the first half of
// ft_open_fabric_res, and ft_start_server's).
func (s *Session) openFabric(info *fi.Info) error {
	f, err := fi.OpenFabric(info)
	if err != nil {
		return callErr("fi_fabric", err)
	}
	s.fabric = f
	q, err := eq.OpenEQ(f, &eq.Attr{WaitObj: fi.WaitUnspec})
	if err != nil {
		return callErr("fi_eq_open", err)
	}
	s.eq = q
	return nil
}

// openDomainRes opens the domain (ft_open_domain_res). gofabric has no
// EQ bound to a domain (-Q) and no shared transmit or receive contexts.
func (s *Session) openDomainRes() error {
	d, err := s.fabric.OpenDomain(s.info)
	if err != nil {
		return callErr("fi_domain", err)
	}
	s.domain = d
	switch {
	case s.opts.Has(OptDomainEQ):
		return errors.Wrap(fi.ENOSYS, "fi_domain_bind: -Q binds the EQ to the domain, which gofabric's domains do not take (their EQ binds to each endpoint)")
	case s.opts.Has(OptSTX):
		return errors.Wrap(fi.ENOSYS, "fi_stx_context: gofabric has no shared transmit contexts")
	case s.opts.Has(OptSRX):
		return errors.Wrap(fi.ENOSYS, "fi_srx_context: gofabric has no shared receive contexts")
	}
	return nil
}

// openFabricRes is ft_open_fabric_res: fabric, event queue, domain.
func (s *Session) openFabricRes() error {
	if err := s.openFabric(s.info); err != nil {
		return err
	}
	return s.openDomainRes()
}

// waitObj is the wait object the completion method needs
// (ft_cq_set_wait_attr, ft_cntr_set_wait_attr).
func (s *Session) waitObj() fi.WaitObj {
	switch s.opts.CompMethod {
	case CompSRead:
		return fi.WaitUnspec
	case CompWaitSet:
		return fi.WaitSet
	case CompWaitFD:
		return fi.WaitFD
	case CompYield:
		return fi.WaitYield
	}
	return fi.WaitNone
}

// waitHint explains a CQ or counter that refused the completion method's
// wait object.
func (s *Session) waitHint(err error) error {
	if fi.Code(err) == fi.ENOSYS && s.waitObj() != fi.WaitNone && s.waitObj() != fi.WaitUnspec {
		return errors.WithHint(err, "gofabric's CQs and counters wait by blocking reads (-c sread), on a file descriptor (-c fd) or not at all (-c spin)")
	}
	return err
}

// allocEPRes opens the CQs, counters and, for unconnected endpoints, the
// AV (ft_alloc_ep_res). The CQs are opened in every mode, as in C: with
// counters (-t counter) they are bound with FI_SELECTIVE_COMPLETION and
// only drive progress.
func (s *Session) allocEPRes() error {
	format := s.cqFormat
	if format == eq.FormatUnspec {
		// C opens FI_CQ_FORMAT_CONTEXT queues for untagged tests; ft asks
		// for the length too, to check what arrives.
		format = eq.FormatMsg
		if s.info.Caps&fi.CapTagged != 0 {
			format = eq.FormatTagged
		}
	}
	txSize, rxSize := s.opts.TxCQSize, s.opts.RxCQSize
	if txSize == 0 && s.info.TxAttr != nil {
		txSize = s.info.TxAttr.Size
	}
	if rxSize == 0 && s.info.RxAttr != nil {
		rxSize = s.info.RxAttr.Size
	}
	var err error
	if s.opts.Has(OptCQShared) {
		if s.txcq, err = eq.OpenCQ(s.domain, &eq.CQAttr{Format: format, Size: txSize + rxSize, WaitObj: s.waitObj()}); err != nil {
			return callErr("fi_cq_open", s.waitHint(err))
		}
		s.rxcq = s.txcq
	} else {
		if s.txcq, err = eq.OpenCQ(s.domain, &eq.CQAttr{Format: format, Size: txSize, WaitObj: s.waitObj()}); err != nil {
			return callErr("fi_cq_open", s.waitHint(err))
		}
	}
	if s.opts.Has(OptTxCntr) {
		if s.txcntr, err = s.cntrOpen(); err != nil {
			return err
		}
	}
	if !s.opts.Has(OptCQShared) {
		if s.rxcq, err = eq.OpenCQ(s.domain, &eq.CQAttr{Format: format, Size: rxSize, WaitObj: s.waitObj()}); err != nil {
			return callErr("fi_cq_open", s.waitHint(err))
		}
	}
	if s.opts.Has(OptRxCntr) {
		if s.rxcntr, err = s.cntrOpen(); err != nil {
			return err
		}
	}
	if s.av == nil && (s.info.EPAttr.Type == fi.EPTypeRDM || s.info.EPAttr.Type == fi.EPTypeDgram) {
		if s.opts.AVName != "" {
			return errors.Wrapf(fi.ENOSYS, "fi_av_open: -a %s names a shared AV, which gofabric's AVs do not have", s.opts.AVName)
		}
		t := fi.AVMap
		if s.info.DomainAttr != nil && s.info.DomainAttr.AVType != fi.AVUnspec {
			t = s.info.DomainAttr.AVType
		}
		if s.av, err = fi.OpenAV(s.domain, &fi.AVAttr{Type: t, Count: s.opts.AVSize}); err != nil {
			return callErr("fi_av_open", err)
		}
	}
	return nil
}

// cntrOpen opens a completion counter with the completion method's wait
// object (ft_cntr_open).
func (s *Session) cntrOpen() (eq.Counter, error) {
	c, err := eq.OpenCounter(s.domain, &eq.CounterAttr{Events: eq.CounterEventsComp, WaitObj: s.waitObj()})
	if err != nil {
		return nil, callErr("fi_cntr_open", s.waitHint(err))
	}
	return c, nil
}

// allocActiveRes is ft_alloc_active_res: the queues, then the endpoint.
func (s *Session) allocActiveRes() error {
	if err := s.allocEPRes(); err != nil {
		return err
	}
	e, err := ep.Open(s.domain, s.info)
	if err != nil {
		return callErr("fi_endpoint", err)
	}
	s.ep = e
	s.msg, _ = e.(ep.Msg)
	s.tagged, _ = e.(ep.Tagged)
	s.cm, _ = e.(ep.CM)
	switch {
	case s.isTagged() && s.tagged == nil:
		return errors.Wrapf(fi.ENOSYS, "fi_endpoint: %s's endpoint has no tagged messages", s.info.FabricAttr.ProvName)
	case !s.isTagged() && s.hints.Caps&fi.CapMsg != 0 && s.msg == nil:
		return errors.Wrapf(fi.ENOSYS, "fi_endpoint: %s's endpoint has no messages", s.info.FabricAttr.ProvName)
	}
	return nil
}

// enableEP binds the EQ (connected endpoints), the AV, the CQs and the
// counters to the endpoint and enables it (ft_enable_ep).
func (s *Session) enableEP() error {
	bind := func(obj fi.Fid, flags fi.Flags) error {
		if err := s.ep.Bind(obj, flags); err != nil {
			return callErr("fi_ep_bind", err)
		}
		return nil
	}
	if s.info.EPAttr.Type == fi.EPTypeMsg || s.info.Caps&(fi.CapMulticast|fi.CapCollective) != 0 {
		if err := bind(s.eq, 0); err != nil {
			return err
		}
	}
	if s.av != nil {
		if err := bind(s.av, 0); err != nil {
			return err
		}
	}
	txFlags, rxFlags := fi.FlagSend, fi.FlagRecv
	if !s.opts.Has(OptTxCQ) {
		txFlags |= fi.FlagSelectiveCompletion
	}
	if !s.opts.Has(OptRxCQ) {
		rxFlags |= fi.FlagSelectiveCompletion
	}
	if s.rxcq == s.txcq {
		// A shared CQ is bound once for both directions (C binds it
		// twice, once with each flag).
		if err := bind(s.txcq, txFlags|rxFlags); err != nil {
			return err
		}
	} else {
		if err := bind(s.txcq, txFlags); err != nil {
			return err
		}
		if err := bind(s.rxcq, rxFlags); err != nil {
			return err
		}
	}
	if s.txcntr != nil {
		var f fi.Flags
		if !s.opts.Has(OptTxCQ) {
			f = fi.FlagSend
		}
		switch {
		case s.hints.Caps&(fi.CapWrite|fi.CapRead) != 0:
			f |= fi.Flags(s.hints.Caps & (fi.CapWrite | fi.CapRead))
		case s.hints.Caps&fi.CapRMA != 0:
			f |= fi.FlagWrite | fi.FlagRead
		}
		if err := bind(s.txcntr, f); err != nil {
			return err
		}
	}
	if s.rxcntr != nil {
		var f fi.Flags
		if !s.opts.Has(OptRxCQ) {
			f = fi.FlagRecv
		}
		switch {
		case s.hints.Caps&(fi.CapRemoteWrite|fi.CapRemoteRead) != 0:
			f |= fi.Flags(s.hints.Caps & (fi.CapRemoteWrite | fi.CapRemoteRead))
		case s.hints.Caps&fi.CapRMA != 0:
			f |= fi.FlagRemoteWrite | fi.FlagRemoteRead
		}
		if err := bind(s.rxcntr, f); err != nil {
			return err
		}
	}
	if err := s.ep.Enable(); err != nil {
		return callErr("fi_enable", err)
	}
	return nil
}

// enableEPRecv enables the endpoint, allocates the buffers and posts the
// first receive, which for unconnected endpoints gets the client's
// address (ft_enable_ep_recv).
func (s *Session) enableEPRecv() error {
	if err := s.enableEP(); err != nil {
		return err
	}
	if err := s.allocMsgs(); err != nil {
		return err
	}
	if !s.opts.Has(OptSkipMsgAlloc) && s.info.Caps&(fi.CapMsg|fi.CapTagged) != 0 {
		return s.postRx(max(s.rxSize, maxCtrlMsg))
	}
	return nil
}

// mrAccess is the access an MR over the data buffers needs
// (ft_info_to_mr_access).
func mrAccess(info *fi.Info) fi.Access {
	const msgAccess = fi.CapSend | fi.CapRecv
	const rmaAccess = fi.CapRead | fi.CapWrite | fi.CapRemoteRead | fi.CapRemoteWrite
	var a fi.Caps
	local := info.Mode&fi.ModeLocalMR != 0 || (info.DomainAttr != nil && info.DomainAttr.MRMode&fi.MRModeLocal != 0)
	if local {
		if info.Caps&(fi.CapMsg|fi.CapTagged) != 0 {
			if info.Caps&msgAccess != 0 {
				a |= info.Caps & msgAccess
			} else {
				a |= msgAccess
			}
		}
		if info.Caps&(fi.CapRMA|fi.CapAtomic) != 0 {
			if info.Caps&rmaAccess != 0 {
				a |= info.Caps & rmaAccess
			} else {
				a |= rmaAccess
			}
		}
	} else if info.Caps&(fi.CapRMA|fi.CapAtomic) != 0 {
		if rmaReadTargetAllowed(info.Caps) {
			a |= fi.CapRemoteRead
		}
		if rmaWriteTargetAllowed(info.Caps) {
			a |= fi.CapRemoteWrite
		}
	}
	return fi.Access(a)
}

// rmaReadTargetAllowed reports whether caps let peers read this side's
// memory (ft_rma_read_target_allowed).
func rmaReadTargetAllowed(caps fi.Caps) bool {
	if caps&(fi.CapRMA|fi.CapAtomic) == 0 {
		return false
	}
	return caps&fi.CapRemoteRead != 0 || caps&(fi.CapRead|fi.CapWrite|fi.CapRemoteWrite) == 0
}

// rmaWriteTargetAllowed reports whether caps let peers write this side's
// memory (ft_rma_write_target_allowed).
func rmaWriteTargetAllowed(caps fi.Caps) bool {
	if caps&(fi.CapRMA|fi.CapAtomic) == 0 {
		return false
	}
	return caps&fi.CapRemoteWrite != 0 || caps&(fi.CapRead|fi.CapWrite|fi.CapRemoteWrite) == 0
}

// regMR registers buf with the given access and requested key when the
// domain needs it (ft_reg_mr): with FI_MR_LOCAL, or for RMA and atomics.
// It returns a nil MR otherwise.
func (s *Session) regMR(buf []byte, access fi.Access, key uint64) (fi.MR, any, error) {
	mode := fi.MRMode(0)
	if s.info.DomainAttr != nil {
		mode = s.info.DomainAttr.MRMode
	}
	if mode&fi.MRModeLocal == 0 && s.info.Caps&(fi.CapRMA|fi.CapAtomic) == 0 {
		return nil, nil, nil
	}
	if mode&fi.MRModeEndpoint != 0 {
		return nil, nil, errors.Wrapf(fi.ENOSYS, "fi_mr_bind: %s asks for FI_MR_ENDPOINT, and gofabric's MRs do not bind to endpoints", s.info.FabricAttr.ProvName)
	}
	mr, err := fi.RegisterMR(s.domain, &fi.MRAttr{Buf: buf, Access: access, RequestedKey: key}, 0)
	if err != nil {
		return nil, nil, callErr("fi_mr_reg", err)
	}
	return mr, mr.Desc(), nil
}

// setTxRxSizes is ft_set_tx_rx_sizes: the largest message is -S N, or the
// table's last size, at most max_msg_size, plus the prefix.
func (s *Session) setTxRxSizes() (tx, rx int) {
	tx = s.opts.maxSize()
	if s.opts.Has(OptSize) {
		tx = s.opts.TransferSize
	}
	tx = min(tx, s.maxMsgSize())
	return tx + s.txPrefix, tx + s.rxPrefix
}

// allocMsgs allocates the data buffers and registers them (ft_alloc_msgs).
// C sizes its buffer for -W windows of messages in each direction and uses
// the first of each in every program but those with
// OptAllocMultMR; ft allocates that first one only.
func (s *Session) allocMsgs() error {
	if s.buf != nil || s.opts.Has(OptSkipMsgAlloc) {
		return nil
	}
	if s.opts.Has(OptAllocMultMR) {
		return errors.Wrap(fi.ENOSYS, "ft: one MR per window buffer (FT_OPT_ALLOC_MULT_MR) is not written yet")
	}
	s.txSize, s.rxSize = s.setTxRxSizes()
	// Room for a control message after the prefix too (C's window of
	// buffers gives it that room).
	rxLen, txLen := max(s.rxSize, maxCtrlMsg)+s.rxPrefix, max(s.txSize, maxCtrlMsg)+s.txPrefix
	s.buf = alloc(rxLen+txLen, s.opts.Has(OptAlign))
	s.rxBuf, s.txBuf = s.buf[:rxLen:rxLen], s.buf[rxLen:]
	if !s.opts.Has(OptSkipRegMR) {
		mr, desc, err := s.regMR(s.buf, mrAccess(s.info), mrKey)
		if err != nil {
			return err
		}
		s.mr, s.mrDesc = mr, desc
	}
	s.fin = ep.Message{IOV: [][]byte{s.txBuf[:4+s.txPrefix]}, Desc: []any{s.mrDesc}, Context: &s.txCtx}
	s.tfin = ep.TaggedMessage{IOV: s.fin.IOV, Desc: s.fin.Desc, Context: &s.txCtx}
	return nil
}

// alloc returns n zeroed bytes, every page written once as C's memset
// writes its buffer (an unwritten page reads as the kernel's shared zero
// page, which makes sends from it faster or slower than from real memory),
// starting on a page boundary when aligned (-l).
func alloc(n int, aligned bool) []byte {
	page := os.Getpagesize()
	if !aligned {
		b := make([]byte, n)
		touchPages(b, page)
		return b
	}
	b := make([]byte, n+page)
	off := 0
	if r := int(uintptrOf(b) % uintptr(page)); r != 0 {
		off = page - r
	}
	b = b[off : off+n : off+n]
	touchPages(b, page)
	return b
}

// touchPages writes a zero into every page of b.
func touchPages(b []byte, page int) {
	for i := 0; i < len(b); i += page {
		b[i] = 0
	}
}

// startServer opens the passive endpoint and listens (ft_start_server),
// after the out-of-band socket's accept when there is one.
func (s *Session) startServer() error {
	if err := s.initOOB(); err != nil {
		return err
	}
	info, err := s.getinfo(s.hints)
	if err != nil {
		return err
	}
	s.pepInfo = info
	if err := s.openFabric(info); err != nil {
		return err
	}
	pep, err := ep.OpenPassive(s.fabric, info)
	if err != nil {
		return callErr("fi_passive_ep", err)
	}
	s.pep = pep
	if err := pep.Bind(s.eq, 0); err != nil {
		return callErr("fi_pep_bind", err)
	}
	if err := pep.Listen(); err != nil {
		return callErr("fi_listen", err)
	}
	return nil
}

// connectMsg sets up a connected endpoint as the programs with MSG
// endpoints do: the client connects (ft_client_connect); the server
// listens, then takes and accepts one request (ft_start_server,
// ft_server_connect).
func (s *Session) connectMsg() error {
	if s.opts.IsClient() {
		return s.clientConnect()
	}
	if err := s.startServer(); err != nil {
		return err
	}
	return s.serverConnect()
}

// initEndpoint sets up the endpoint of a program that takes -e: connected
// for FI_EP_MSG (connectMsg), else ft_init_fabric's.
func (s *Session) initEndpoint() error {
	if s.hints.EPAttr.Type == fi.EPTypeMsg {
		return s.connectMsg()
	}
	return s.initFabric()
}

// serverConnect takes the next connection request, opens the endpoint for
// it and accepts it (ft_server_connect); a failure after the request
// rejects it.
func (s *Session) serverConnect() error {
	err := s.serverConnectSteps()
	if err != nil && s.info != nil && s.info.Handle != nil && s.pep != nil {
		_ = s.pep.Reject(s.info.Handle, nil)
	}
	return err
}

func (s *Session) serverConnectSteps() error {
	ev, err := s.waitEvent(eq.EventConnReq, "listen", 0)
	if err != nil {
		return err
	}
	s.contact = true
	s.setInfo(ev.(*eq.ConnReq).Info)
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
	if err := s.cm.Accept(nil); err != nil {
		return callErr("fi_accept", err)
	}
	return s.completeConnect()
}

// clientConnect opens the endpoint and connects to the server
// (ft_client_connect).
func (s *Session) clientConnect() error {
	s.contact = true
	if err := s.initOOB(); err != nil {
		return err
	}
	info, err := s.getinfo(s.hints)
	if err != nil {
		return err
	}
	s.setInfo(info)
	if err := s.openFabricRes(); err != nil {
		return err
	}
	seqs := [4]uint64{s.txSeq, s.rxSeq, s.txCQCntr, s.rxCQCntr}
	if err := s.allocActiveRes(); err != nil {
		return err
	}
	if err := s.enableEPRecv(); err != nil {
		return err
	}
	if s.cm == nil {
		return errors.Wrapf(fi.ENOSYS, "fi_connect: %s's endpoint has no connection management", s.info.FabricAttr.ProvName)
	}
	if len(s.info.DestAddr) == 0 {
		return errors.WithHint(errors.Wrap(fi.EINVAL, "fi_connect: no server address (fi_info.dest_addr is empty)"),
			"with -E or -b a connecting client needs -s <its own address> to look the server up by its address")
	}
	start := time.Now()
	for wait := firstConnectWait; ; wait = min(2*wait, 500*time.Millisecond) {
		if err := s.cm.Connect(s.info.DestAddr, nil); err != nil {
			return callErr("fi_connect", err)
		}
		err := s.completeConnect()
		if err == nil || !s.retryRefused(err, start, wait) {
			return err
		}
		s.txSeq, s.rxSeq, s.txCQCntr, s.rxCQCntr = seqs[0], seqs[1], seqs[2], seqs[3]
		if err := s.reopenActiveRes(); err != nil {
			return err
		}
	}
}

// firstConnectWait is the pause before a refused connect's first retry
// (retryRefused); each next one doubles it, up to half a second.
const firstConnectWait = 10 * time.Millisecond

// retryRefused reports whether a connect that ended in err is tried
// again, after a pause of wait: only when nothing listened at the
// server's address yet, the out-of-band socket is in use, and the
// program's limit has not run out. fabtests' server (ft_start_server)
// accepts the out-of-band connection before it opens its passive
// endpoint, so a client can reach the server's address before its
// fi_listen; C's client rarely does, because its fi_getinfo loads every
// provider first, but ft's can (seen over verbs on a slow guest: the
// connection manager answers "nothing listening"). C's client would fail
// there; ft waits for the listen instead of losing the race.
func (s *Session) retryRefused(err error, start time.Time, wait time.Duration) bool {
	var e *eq.EQError
	if s.opts.Flags&OptOOBCtrl == 0 || !errors.As(err, &e) || e.Reason != eq.ReasonNoListener {
		return false
	}
	l := s.limit()
	if l > 0 && time.Since(start)+wait > l {
		return false
	}
	if wait == firstConnectWait {
		fmt.Fprintf(s.stderr, "fi_connect: nothing listening at the server's address yet (%v); trying again for up to %v\n", e.Err, l)
	}
	select {
	case <-s.ctx.Done():
		return false
	case <-time.After(wait):
		return true
	}
}

// reopenActiveRes replaces the endpoint of a refused connect, and the
// queues and counters bound to it, by new ones (an endpoint whose connect
// failed is not connected again). The buffers and their registration
// belong to the domain and stay.
func (s *Session) reopenActiveRes() error {
	if s.rxcq == s.txcq {
		s.rxcq = nil
	}
	if err := closeFids(s.ep, s.rxcq, s.txcq, s.rxcntr, s.txcntr); err != nil {
		return callErr("fi_close", err)
	}
	s.ep, s.msg, s.tagged, s.cm = nil, nil, nil, nil
	s.rxcq, s.txcq, s.rxcntr, s.txcntr = nil, nil, nil, nil
	if err := s.allocActiveRes(); err != nil {
		return err
	}
	return s.enableEPRecv()
}

// completeConnect waits for the endpoint's FI_CONNECTED event
// (ft_complete_connect).
func (s *Session) completeConnect() error {
	ev, err := s.waitEvent(eq.EventConnected, "accept", s.limit())
	if err != nil {
		return err
	}
	if c := ev.(*eq.Connected); c.Fid != fi.Fid(s.ep) {
		return errors.Wrapf(fi.EOTHER, "Unexpected CM event FI_CONNECTED for %v, not this endpoint", c.Fid)
	}
	return nil
}

// waitEvent waits for the next EQ event, which must be of type want
// (fi_eq_sread with ft's checks); an error entry is printed as C's
// eq_readerr prints it and returned. limit bounds the wait (0: none).
func (s *Session) waitEvent(want eq.EventType, step string, limit time.Duration) (eq.Event, error) {
	ctx, cancel := s.ctx, context.CancelFunc(func() {})
	if limit > 0 {
		ctx, cancel = context.WithTimeout(s.ctx, limit)
	}
	defer cancel()
	ev, err := s.eq.SRead(ctx)
	if errors.Is(err, fi.EAVAIL) {
		e, rerr := s.eq.ReadErr()
		if rerr != nil {
			return nil, callErr("fi_eq_readerr", rerr)
		}
		return nil, errors.Wrapf(e, "fi_eq_sread %s: eq_readerr %d (%v), provider errno: %d", step, int(e.Err), e.Err, e.ProvErrno)
	}
	if err != nil {
		return nil, errors.Wrapf(err, "fi_eq_sread %s: waiting for %v", step, want)
	}
	if ev.Type() != want {
		return nil, errors.Wrapf(fi.EOTHER, "Unexpected CM event %v (waiting for %v)", ev.Type(), want)
	}
	return ev, nil
}

// initFabric sets up an unconnected endpoint and exchanges addresses with
// the peer (ft_init_fabric).
func (s *Session) initFabric() error {
	if s.opts.IsClient() {
		s.contact = true
	}
	if err := s.initOOB(); err != nil {
		return err
	}
	info, err := s.getinfo(s.hints)
	if err != nil {
		return err
	}
	s.setInfo(info)
	if err := s.openFabricRes(); err != nil {
		return err
	}
	if err := s.allocActiveRes(); err != nil {
		return err
	}
	if err := s.enableEPRecv(); err != nil {
		return err
	}
	return s.initAV()
}
