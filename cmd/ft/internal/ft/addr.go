package ft

import (
	"bytes"
	"encoding/binary"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// Linux's address families, the sa_family of the sockaddrs that travel.
const (
	afInet  = 2
	afInet6 = 10
)

// getname returns the endpoint's address (fi_getname), at most
// maxCtrlMsg bytes as C's buffer holds.
func getname(n ep.Namer) ([]byte, error) {
	buf := make([]byte, maxCtrlMsg)
	l, err := n.Name(buf)
	if err != nil {
		return nil, callErr("fi_getname", err)
	}
	return buf[:l], nil
}

// avInsert inserts one peer address and returns its fi_addr_t
// (ft_av_insert).
func (s *Session) avInsert(addr []byte) (fi.Addr, error) {
	fa, err := s.av.Insert([][]byte{addr}, 0)
	if err != nil {
		return fi.AddrUnspec, callErr("fi_av_insert", err)
	}
	if len(fa) != 1 || fa[0] == fi.AddrUnspec {
		return fi.AddrUnspec, errors.Wrapf(fi.EOTHER, "fi_av_insert: number of addresses inserted = %d; number of addresses given = 1", len(fa))
	}
	return fa[0], nil
}

// peerAddr takes the peer's address out of raw, the bytes it sent: a
// whole message when exact (its length is the address's), else a block
// that begins with the address (the 256 bytes of the out-of-band
// exchange, whose tail C leaves as it finds it, or a receive buffer read
// through a counter). The address must be one of the endpoint's format:
// a sockaddr of the right family and length, or a non-empty FI_ADDR_STR
// name (up to its first NUL). A peer that sends anything else gets
// fi.EINVAL here rather than an AV entry that reaches nobody.
func (s *Session) peerAddr(raw []byte, exact bool) ([]byte, error) {
	format := s.info.AddrFormat
	switch format {
	case fi.FormatSockaddr, fi.FormatSockaddrIn, fi.FormatSockaddrIn6:
		want := 16
		if format == fi.FormatSockaddrIn6 || (format == fi.FormatSockaddr && len(raw) >= 2 && binary.NativeEndian.Uint16(raw) == afInet6) {
			want = 28
		}
		if (exact && len(raw) != want) || len(raw) < want {
			return nil, errors.Wrapf(fi.EINVAL, "the peer's address is %d bytes; %v addresses are %d", len(raw), format, want)
		}
		a := raw[:want]
		if _, f, err := fi.AddrPortFromSockaddr(a); err != nil || (format != fi.FormatSockaddr && f != format) {
			return nil, errors.Wrapf(fi.EINVAL, "the peer's address (%x) is not an %v address", a, format)
		}
		return bytes.Clone(a), nil
	case fi.FormatStr:
		a := raw
		if i := bytes.IndexByte(a, 0); i >= 0 {
			a = a[:i]
		}
		if len(a) == 0 {
			return nil, errors.Wrapf(fi.EINVAL, "the peer's address is empty; %v addresses are names", format)
		}
		return bytes.Clone(a), nil
	}
	if exact {
		return bytes.Clone(raw), nil
	}
	// A format ft cannot measure: the peer's address is as long as ours.
	own, err := getname(s.ep.(ep.Namer))
	if err != nil {
		return nil, err
	}
	if len(raw) < len(own) {
		return nil, errors.Wrapf(fi.EINVAL, "the peer's address block is %d bytes, shorter than a %d-byte %v address", len(raw), len(own), format)
	}
	return bytes.Clone(raw[:len(own)]), nil
}

// initAV exchanges addresses with the peer and inserts its address into
// the AV as remote (ft_init_av, ft_init_av_dst_addr). Out of band (-E,
// -b) each side sends its name in a 256-byte block and reads the
// other's. In band, the client inserts the server's address (from
// fi_getinfo), sends its own name as a message and waits for a 1-byte
// answer; the server takes the name from its first receive, inserts it,
// posts the receive again and answers.
func (s *Session) initAV() error {
	if s.opts.Has(OptSkipAddrExch) {
		return nil
	}
	switch {
	case s.opts.Has(OptOOBAddrExch):
		if err := s.exchangeAddressesOOB(); err != nil {
			return err
		}
	case s.opts.IsClient():
		fa, err := s.avInsert(s.info.DestAddr)
		if err != nil {
			return err
		}
		s.remote = fa
		name, err := s.endpointName()
		if err != nil {
			return err
		}
		copy(s.txBuf[s.txPrefix:], name)
		if err := s.tx(len(name)); err != nil {
			return errors.Wrap(err, "sending our address")
		}
		if err := s.rx(1); err != nil {
			return errors.Wrap(err, "waiting for the server's answer to our address")
		}
	default:
		if err := s.getRxComp(s.rxSeq, anyLength); err != nil {
			return errors.Wrap(err, "waiting for the client's address")
		}
		s.contact = true
		// The completion's length is the address's; a counter gives
		// none, and then the receive buffer holds it at its start.
		raw, exact := s.rxBuf[s.rxPrefix:][:maxCtrlMsg], false
		if s.lastRxLen >= 0 {
			raw, exact = s.rxBuf[s.rxPrefix:][:s.lastRxLen], true
		}
		addr, err := s.peerAddr(raw, exact)
		if err != nil {
			return errors.Wrap(err, "the client's address")
		}
		fa, err := s.avInsert(addr)
		if err != nil {
			return err
		}
		// C passes no fi_addr_t for an FI_AV_TABLE and takes 0, its
		// first entry.
		s.remote = fa
		if s.info.DomainAttr != nil && s.info.DomainAttr.AVType == fi.AVTable {
			s.remote = 0
		}
		if err := s.postRx(s.rxSize); err != nil {
			return err
		}
		if err := s.tx(1); err != nil {
			return errors.Wrap(err, "answering the client's address")
		}
	}
	// A test with neither messages nor tagged messages posts no receive
	// but, with the socket, waits for its first RMA completion.
	if s.info.Caps&(fi.CapMsg|fi.CapTagged) == 0 && s.opts.OOBPort != "" {
		s.rxSeq++
	}
	return nil
}

// endpointName is fi_getname of the endpoint.
func (s *Session) endpointName() ([]byte, error) {
	n, ok := s.ep.(ep.Namer)
	if !ok {
		return nil, errors.Wrapf(fi.ENOSYS, "fi_getname: %s's endpoint has no address", s.info.FabricAttr.ProvName)
	}
	return getname(n)
}

// exchangeAddressesOOB sends the endpoint's name in a 256-byte block over
// the out-of-band socket, reads the peer's block and inserts its address
// (ft_exchange_addresses_oob).
func (s *Session) exchangeAddressesOOB() error {
	name, err := s.endpointName()
	if err != nil {
		return err
	}
	block := make([]byte, maxCtrlMsg)
	copy(block, name)
	if err := s.oob.send(block); err != nil {
		return errors.Wrap(err, "sending our address out of band")
	}
	clear(block)
	if err := s.oob.recv(block); err != nil {
		return errors.Wrap(err, "receiving the peer's address out of band")
	}
	addr, err := s.peerAddr(block, false)
	if err != nil {
		return errors.Wrap(err, "the peer's address out of band")
	}
	fa, err := s.avInsert(addr)
	if err != nil {
		return err
	}
	s.remote = fa
	return nil
}
