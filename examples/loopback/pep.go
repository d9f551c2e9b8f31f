package loopback

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// passiveEP is a passive endpoint (struct fid_pep; fi_endpoint(3),
// fi_cm(3)): it listens at its address and reports each connection
// request as an eq.ConnReq on its event queue. kit.Passive does the
// binding, the state and backlog (ep.Backlog) and the close rule; the
// methods here add the transport, the address on the wire. Safe for
// concurrent use.
type passiveEP struct {
	kit.Passive[epSet]

	// Guarded by Mu (kit.Passive's): the address, bound to port on the
	// wire while listening. Mu is taken before wire.mu, never after.
	name []byte
	port uint16
}

var (
	_ ep.PassiveEndpoint = (*passiveEP)(nil)
	_ ep.BacklogSetter   = (*passiveEP)(nil)
)

// OpenPassive opens a passive endpoint (fi_passive_ep) for info, whose
// source address (GetInfo with fi.FlagSource) is where it will listen;
// without a port it listens on a free one.
func (f *fabric) OpenPassive(info *fi.Info) (ep.PassiveEndpoint, error) {
	l := &passiveEP{}
	if err := l.Init(&f.Fabric, info, l.setName); err != nil {
		return nil, err
	}
	return l, nil
}

// setName checks addr and makes it the address to listen at.
func (l *passiveEP) setName(addr []byte) error {
	ap, err := parseName(addr)
	if err != nil {
		return errors.Wrapf(err, "%s: passive endpoint: address", provName)
	}
	l.name = makeName(ap.Addr(), ap.Port())
	return nil
}

// CMDataSize returns the most private data Reject carries
// (FI_OPT_CM_DATA_SIZE).
func (l *passiveEP) CMDataSize() int { return cmDataSize }

// Listen starts listening (fi_listen): the address is bound on the wire,
// on a free port when it has none; fi.EADDRINUSE says it is taken.
func (l *passiveEP) Listen() error {
	return l.ListenWith(func() error {
		ap, _ := parseName(l.name)
		wire.mu.Lock()
		defer wire.mu.Unlock()
		port, err := bindPort(ap.Port(), l)
		if err != nil {
			return errors.Wrapf(err, "%s: listen", provName)
		}
		l.port, l.name = port, makeName(ap.Addr(), port)
		return nil
	})
}

// Name copies the passive endpoint's address into buf (fi_getname), with
// fi.ETOOSMALL and the full length when buf is too short.
func (l *passiveEP) Name(buf []byte) (int, error) {
	return l.NameWith(buf, func() []byte { return l.name })
}

// SetName sets the address to listen at (fi_setname), before Listen.
func (l *passiveEP) SetName(addr []byte) error { return l.SetNameWith(addr, l.setName) }

// Reject refuses the request handle with private data (fi_reject): the
// connecting endpoint gets an fi.ECONNREFUSED error event with data as
// ErrData. A request already accepted or rejected gives fi.EINVAL.
func (l *passiveEP) Reject(handle fi.Fid, data []byte) error {
	return l.RejectWith(handle, data, cmDataSize, refuse)
}

// refuse gives a connection request its refusal: a reject, with data.
func refuse(handle fi.Fid, data []byte) {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	handle.(*connReq).from.rejected(data)
}

// Close closes the passive endpoint (fi_close): the address is free
// again, the requests still pending are refused, and the event queue can
// close. Connections it accepted live on. A second Close gives fi.EBADF.
func (l *passiveEP) Close() error {
	err := l.BeginClose(func() {
		wire.mu.Lock()
		defer wire.mu.Unlock()
		if l.port != 0 {
			delete(wire.bound, l.port)
		}
	})
	if err != nil {
		return err
	}
	l.EndClose(refuse)
	return nil
}
