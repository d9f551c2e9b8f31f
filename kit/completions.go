package kit

import "github.com/gofabric/gofabric/fi"

// Counter slots: the operation kinds an endpoint's counters count, one
// slot per fi_ep_bind counter flag (fi_cntr(3)).
const (
	CntrSend = iota
	CntrRecv
	CntrRead
	CntrWrite
	CntrRemoteRead
	CntrRemoteWrite
	// NumCntr is the number of counter slots.
	NumCntr
)

// CntrFlags are the fi_ep_bind flags of the counter slots.
var CntrFlags = [NumCntr]fi.Flags{fi.FlagSend, fi.FlagRecv, fi.FlagRead, fi.FlagWrite, fi.FlagRemoteRead, fi.FlagRemoteWrite}

// Completions are where an endpoint's operations complete (C's util_ep
// tx_cq, rx_cq and counters): fixed at Enable from the endpoint's
// Bindings, then read by the data path without a lock. S is the
// provider's endpoint-set type, as in Domain[S]: only the queues and
// counters its own domain opened count.
type Completions[S any] struct {
	// TxCQ and RxCQ are the bound completion queues, or nil; TxSel and
	// RxSel say they were bound with FI_SELECTIVE_COMPLETION, so that
	// only operations with FI_COMPLETION report.
	TxCQ, RxCQ   *CQ
	TxSel, RxSel bool
	// Cntr are the bound counters by slot (CntrSend...), or nil.
	Cntr [NumCntr]*Counter
	// Sets are the endpoint sets of the bound queues and counters, each
	// once: the endpoint adds itself to them when it is enabled, so that
	// reading or waiting on them drives its progress, and leaves them
	// when it closes. A provider may append more (an event queue's).
	Sets []*S
}

// Resolve takes the completion queues and counters bound in b
// (fi_ep_bind's FI_TRANSMIT, FI_RECV, FI_SELECTIVE_COMPLETION and counter
// flags) that are a DomainCQ[S] or DomainCounter[S]; the endpoint's
// Enable calls it once b.CheckEnable has passed.
func (c *Completions[S]) Resolve(b *Bindings) {
	if q, ok := b.TxCQ.(*DomainCQ[S]); ok {
		c.TxCQ, c.TxSel = q.CQ, b.TxSelective
		c.addSet(&q.Eps)
	}
	if q, ok := b.RxCQ.(*DomainCQ[S]); ok {
		c.RxCQ, c.RxSel = q.CQ, b.RxSelective
		c.addSet(&q.Eps)
	}
	for i, f := range CntrFlags {
		if k, ok := b.Counters[f].(*DomainCounter[S]); ok {
			c.Cntr[i] = k.Counter
			c.addSet(&k.Eps)
		}
	}
}

func (c *Completions[S]) addSet(s *S) {
	for _, x := range c.Sets {
		if x == s {
			return
		}
	}
	c.Sets = append(c.Sets, s)
}

// Signal wakes the readers blocked on the bound queues and counters
// (fi_cq_signal, fi_cntr_wait's wake-up), so that they look again: at an
// endpoint just enabled, or one closing.
func (c *Completions[S]) Signal() {
	if c.TxCQ != nil {
		c.TxCQ.Signal()
	}
	if c.RxCQ != nil && c.RxCQ != c.TxCQ {
		c.RxCQ.Signal()
	}
	for i, k := range c.Cntr {
		if k != nil && !slicesContain(c.Cntr[:i], k) {
			k.Signal()
		}
	}
}

func slicesContain(ks []*Counter, k *Counter) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}
