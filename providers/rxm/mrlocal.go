package rxm

import (
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/rxmwire"
	"github.com/gofabric/gofabric/kit"
)

// Cores that need registered buffers (FI_MR_LOCAL, as verbs; C's
// rxm over verbs): every buffer in a core send, receive or RMA needs the
// descriptor of a core region that holds it. rxm's bounce receives and
// its transmit buffers' copy space come from slabs registered once
// (bounceCount receives per connection, txSlab buffers per slab), released
// when the connection or the endpoint closes; eager sends are copied into
// a registered buffer unless the application gave a descriptor for every
// buffer; the rendezvous and RMA use the application's descriptors when
// given and otherwise register the buffers for the one operation. rxm's
// own short messages (read-done) go with FI_INJECT, which needs no
// descriptor.

// forceMRLocal makes endpoints treat their core as FI_MR_LOCAL (the
// tests' way to run that path over tcp).
var forceMRLocal bool

// txSlab is how many transmit bounce buffers one registration holds.
const txSlab = 16

// bounceOf gives tx its copy space, rxm header and an eager payload, if
// it has none yet: from a registered slab when the core is MR-local (the
// slab's descriptor in bdesc), else plain memory. Made once per tx
// buffer, kept while it is pooled. mu is held.
func (e *endpoint) bounceOf(tx *txBuf) error {
	if tx.bounce != nil {
		return nil
	}
	size := rxmwire.HeaderSize + max(e.eager, rxmwire.RndvDescSize)
	if !e.mrLocal {
		tx.bounce = make([]byte, size)
		return nil
	}
	if len(e.slabFree) == 0 {
		slab := make([]byte, txSlab*size)
		mr, err := e.domain.registerInternal(slab, fi.AccessSend|fi.AccessRecv)
		if err != nil {
			return fi.Code(err)
		}
		e.txSlabs = append(e.txSlabs, mr)
		e.slabDesc = mr.Desc()
		for i := range txSlab {
			e.slabFree = append(e.slabFree, slab[i*size:(i+1)*size:(i+1)*size])
		}
	}
	k := len(e.slabFree) - 1
	tx.bounce, tx.bdesc = e.slabFree[k], e.slabDesc
	e.slabFree[k] = nil
	e.slabFree = e.slabFree[:k]
	return nil
}

// closeSlabs deregisters the transmit slabs, once the core endpoints
// that used them are closed; mu is held.
func (e *endpoint) closeSlabs() {
	for _, tx := range e.txs {
		tx.bounce, tx.bdesc = nil, nil
	}
	for _, tx := range e.segFree {
		tx.bounce, tx.bdesc = nil, nil
	}
	for _, mr := range e.txSlabs {
		_ = mr.Close()
	}
	e.txSlabs, e.slabFree, e.slabDesc = nil, nil, nil
}

// opDesc returns the core descriptor the application gave for buffer i
// of op, nil if none.
func opDesc(op *kit.Op, i int) any {
	if op.IOV == nil {
		if i == 0 {
			return coreDesc(op.Desc)
		}
		return nil
	}
	if i < len(op.Descs) {
		return coreDesc(op.Descs[i])
	}
	return nil
}

// allDescs reports whether op gave a core descriptor for each of its n
// non-empty buffers.
func allDescs(op *kit.Op, bufs [][]byte) bool {
	for i, b := range bufs {
		if len(b) > 0 && opDesc(op, i) == nil {
			return false
		}
	}
	return true
}

// appMR returns the application's rxm region for buffer i of op, if it
// gave one.
func appMR(op *kit.Op, i int) (*memRegion, bool) {
	var d any
	if op.IOV == nil {
		if i == 0 {
			d = op.Desc
		}
	} else if i < len(op.Descs) {
		d = op.Descs[i]
	}
	m, ok := d.(*memRegion)
	return m, ok
}

// registerRecv gives each non-empty buffer of receive r that has no
// descriptor a registration of its own, kept in mrs until the operation
// ends (C's rxm_cq.c registering a rendezvous receive's buffers); mu is
// held. Over a core without FI_MR_LOCAL it does nothing.
func (e *endpoint) registerRecv(r *posted, mrs *[iovLimit]fi.MR) error {
	if !e.mrLocal {
		return nil
	}
	for i, b := range r.iov[:r.niov] {
		if len(b) == 0 || r.desc[i] != nil {
			continue
		}
		mr, err := e.domain.registerInternal(b, fi.AccessRead|fi.AccessRecv)
		if err != nil {
			return err
		}
		mrs[i], r.desc[i] = mr, mr.Desc()
	}
	return nil
}

// closeMRs deregisters what registerRecv or an RMA operation registered.
func closeMRs(mrs *[iovLimit]fi.MR) {
	for i, mr := range mrs {
		if mr != nil {
			_ = mr.Close()
			mrs[i] = nil
		}
	}
}
